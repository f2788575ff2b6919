// A parent process for each rank of `rudra dist`, so that one rank's violent death does not end
// the job. MPICH's process manager (hydra) kills every rank as soon as one is terminated by a
// signal, even under `mpiexec -disable-auto-cleanup`; a rank that exits with a status is left
// to the others. So the rank forks before MPI starts: the child is the rank; the parent holds
// nothing but the launcher's connection, passes on the signals the launcher sends
// (SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT), and when the child is killed, names the rank
// and the signal and exits with 128 + the signal's number.
#pragma once

namespace rudra::tools {

// Returns in the child (the rank). In the parent it waits for the child and exits. Does nothing
// (returns at once) when RUDRA_RANK_GUARD=0 or the fork fails. Call before any thread starts.
void run_under_rank_guard();

}  // namespace rudra::tools
