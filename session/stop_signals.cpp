#include "session/stop_signals.h"

#include <atomic>
#include <csignal>

namespace rudra::session {
namespace {

// Written by the handlers, so lock-free atomics with static storage: the one place the process
// keeps them.
std::atomic<bool> g_stop{false}, g_checkpoint{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) { g_stop = true; }
extern "C" void on_checkpoint_signal(int) { g_checkpoint = true; }

}  // namespace

void install_stop_signals() {
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal;
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR2}) sigaction(sig, &sa, nullptr);
    sa.sa_handler = on_checkpoint_signal;
    sigaction(SIGUSR1, &sa, nullptr);
    std::signal(SIGXFSZ, SIG_IGN);
}

bool stop_requested() { return g_stop.load(); }

bool take_checkpoint_request() { return g_checkpoint.exchange(false); }

}  // namespace rudra::session
