#include "tools/rank_guard.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace rudra::tools {
namespace {

// The child the parent's signal handlers pass signals on to: a signal handler can reach only
// static storage, and the parent runs nothing else.
volatile sig_atomic_t g_child = 0;

extern "C" void pass_on_signal(int sig) {
    if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

const char* rank_text() {
    for (const char* name : {"PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"})
        if (const char* v = std::getenv(name)) return v;
    return "?";
}

}  // namespace

void run_under_rank_guard() {
    if (const char* v = std::getenv("RUDRA_RANK_GUARD"); v && std::strcmp(v, "0") == 0) return;
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child < 0) return;  // no guard: the rank runs as before
    if (child == 0) {
        // The launcher ends a job by killing the processes it started, the guards: their ranks
        // follow, even one that is stopped (SIGSTOP) and could not act on a message.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);  // the guard died before prctl took effect
        return;
    }
    g_child = child;
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = pass_on_signal;
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT, SIGHUP}) sigaction(sig, &sa, nullptr);
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) _exit(1);
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    std::fprintf(stderr, "rudra dist [rank %s]: the rank's process (pid %d) was killed by signal %d (%s)\n", rank_text(),
                 static_cast<int>(child), sig, strsignal(sig));
    std::fflush(stderr);
    _exit(128 + sig);
}

}  // namespace rudra::tools
