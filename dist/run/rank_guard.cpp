#include "dist/run/rank_guard.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace rudra::dist::run {
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

// The command line of process `pid`, its arguments split; empty when it cannot be read.
std::vector<std::string> command_line(long pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::vector<std::string> args;
    std::string arg;
    while (std::getline(in, arg, '\0')) args.push_back(arg);
    return args;
}

long parent_of(long pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    const size_t close = line.rfind(')');  // the name may hold spaces and parentheses
    if (close == std::string::npos) return 0;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    return ppid;
}

}  // namespace

std::string launcher_warning() {
    long pid = getppid();
    for (int depth = 0; depth < 8 && pid > 1; ++depth, pid = parent_of(pid)) {
        const std::vector<std::string> args = command_line(pid);
        if (args.empty()) continue;
        const std::string name = args[0].substr(args[0].rfind('/') + 1);
        if (name != "mpiexec" && name != "mpiexec.hydra" && name != "mpirun" && name != "mpiexec.mpich" &&
            name != "mpirun.mpich")
            continue;
        for (const std::string& a : args)
            if (a == "-disable-auto-cleanup" || a == "--disable-auto-cleanup") return "";
        return "started by " + name +
               " without -disable-auto-cleanup: if one rank is lost, mpiexec ends every rank, even where the "
               "protocol could go on without it. Launch with tools/rudra-launch (or mpiexec -disable-auto-cleanup)";
    }
    return "";
}

void run_under_rank_guard(void (*install_handlers)()) {
    constexpr int kPassedOn[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT, SIGHUP};
    sigset_t passed_on, before;
    sigemptyset(&passed_on);
    for (int sig : kPassedOn) sigaddset(&passed_on, sig);
    sigprocmask(SIG_BLOCK, &passed_on, &before);
    const auto unblock = [&] { sigprocmask(SIG_SETMASK, &before, nullptr); };
    const char* v = std::getenv("RUDRA_RANK_GUARD");
    const pid_t parent = getpid();
    const pid_t child = (v && std::strcmp(v, "0") == 0) ? -1 : fork();
    if (child <= 0) {
        if (child == 0) {
            // The launcher ends a job by killing the processes it started, the guards: their ranks
            // follow, even one that is stopped (SIGSTOP) and could not act on a message.
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(1);  // the guard died before prctl took effect
        }
        install_handlers();  // the rank, or no guard: the rank runs as before
        unblock();
        return;
    }
    g_child = child;
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = pass_on_signal;
    sa.sa_flags = SA_RESTART;
    for (int sig : kPassedOn) sigaction(sig, &sa, nullptr);
    unblock();
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

}  // namespace rudra::dist::run
