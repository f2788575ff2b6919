// A parent process for each rank of `rudra dist`, so that one rank's violent death does not end
// the job. MPICH's process manager (hydra) kills every rank as soon as one is terminated by a
// signal, even under `mpiexec -disable-auto-cleanup`; a rank that exits with a status is left
// to the others. So the rank forks before MPI starts: the child is the rank; the parent holds
// nothing but the launcher's connection, passes on the signals the launcher sends
// (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCONT; the rank handles each of them), and when
// the child is killed, names the rank and the signal and exits with 128 + the signal's number.
#pragma once
#include <string>

namespace rudra::dist::run {

// Returns in the child (the rank), after install_handlers has run there. In the parent it waits
// for the child and exits. Without a guard (RUDRA_RANK_GUARD=0, or the fork fails) it runs
// install_handlers and returns. Call before any thread starts. The signals passed on are
// blocked until each process has its handlers: one that comes while the rank starts (a batch
// system's stop, sent to every process of the step) is taken by the handler, never by the
// default action that would kill the rank.
void run_under_rank_guard(void (*install_handlers)());

// A warning when this process was started by MPICH's mpiexec without -disable-auto-cleanup (read
// from the launcher's command line, where it runs on this node): then one lost rank ends the
// whole job, whatever the protocol could have done without it. Empty when the launch is fine or
// cannot be told (another launcher, or mpiexec on another node).
std::string launcher_warning();

}  // namespace rudra::dist::run
