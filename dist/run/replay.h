// `rudra dist --replay RUN` (dist/run/replay.cpp): one process, no MPI.
#pragma once
#include "dist/run/options.h"

namespace rudra::dist::run {

// Computes the recorded run again (`o.replay`: its output folder or schedule record) into
// `o.output` (default RUN/replay), and compares the final weights with the run's. Returns the
// exit code: 0 when they are identical or the run left none, 1 when they differ. Throws
// std::runtime_error (the file and the line) for a record that cannot be replayed.
int run_replay(const DistOptions& o);

}  // namespace rudra::dist::run
