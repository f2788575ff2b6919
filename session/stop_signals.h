// The signals a run answers, as flags it polls between steps: SIGTERM, SIGINT, SIGHUP and SIGUSR2
// (a batch system's stop, Ctrl-C, a closed terminal, LSF's warning action) ask it to stop with a
// checkpoint; SIGUSR1 asks for a checkpoint now. A file-size limit (SIGXFSZ, ulimit -f) is
// ignored, so that the write fails (EFBIG) and is reported instead of killing the process.
// `rudra train` and every rank of `rudra dist` install the same handlers.
#pragma once

namespace rudra::session {

// Installs the handlers (again after a library, such as MPI_Init, replaced one). The flags are
// the process's: a signal is delivered to the process, not to one run.
void install_stop_signals();
bool stop_requested();
// True once for each SIGUSR1 since the last call.
bool take_checkpoint_request();

}  // namespace rudra::session
