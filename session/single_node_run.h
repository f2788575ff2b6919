// The life cycle of a single-node training run around TrainingSession::step: the mini-batch
// stream and its position, the epochs, the display and test cadence of the solver, periodic and
// requested snapshots, a stop request, the final snapshot and the metrics lines. `rudra train`
// is this run plus its command line; the loop is tested in-process (test_session).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "session/metrics_log.h"
#include "session/training_session.h"

namespace rudra::session {

struct SingleNodeRunConfig {
    std::string output;  // the folder of the snapshots (OUTDIR/<snapshot_prefix>_iter_N.rudra)
    int64_t max_iter = 0;
    // Where the run starts: 0, or a resumed snapshot's iteration and stream position and seed.
    int64_t start_iter = 0;
    uint64_t start_position = 0;
    uint64_t data_seed = 1;
    int decode_threads = 1;
    std::function<void()> on_io_thread_start;  // binds the prefetching thread (placement)
    // What defines the run (solver, data, batch, seed...), kept in every snapshot's checkpoint
    // metadata (session/checkpoint.h); "learners" is 1.
    nlohmann::ordered_json settings = {{"learners", 1}};
    // Asked after every step: stop now (with a snapshot), or write a snapshot and go on.
    std::function<bool()> stop_requested, snapshot_requested;
};

// A resumed run's start: `snapshot`'s weights and solver history into `run`, and its iteration,
// stream position and data seed into `config` (a note when the seed differs from `seed`). The
// snapshot is a single-node run's checkpoint (or a snapshot without metadata); a distributed
// run's is refused by name.
void resume_single_node(TrainingSession& run, const std::string& snapshot, uint64_t seed, SingleNodeRunConfig& config,
                        std::vector<std::string>& notes);

// What the run shows as it goes; tools/ draws it (a progress bar, readable lines).
struct RunDisplay {
    // After every step: iterations done of the total, mini-batches and images per second of
    // compute in this epoch, the epoch's mean loss so far, the epoch (1-based).
    std::function<void(int64_t done, int64_t total, double iters_per_s, double images_per_s, double loss, int epoch)>
        progress;
    std::function<void(const std::string& line)> line;  // a readable line, at display and epoch ends
};

struct SingleNodeRunResult {
    int64_t iterations = 0;  // where the run ended
    bool interrupted = false;
    std::string last_snapshot;
};

// Trains `run` on `sets` from the configured start to max_iter, or until a stop request; writes
// the snapshots and `log`'s lines. Throws std::runtime_error when the loss diverges (after
// logging it), nn::WriteError when a file cannot be written.
SingleNodeRunResult run_single_node(TrainingSession& run, const data::TrainTest& sets, const SingleNodeRunConfig& config,
                                    MetricsLog& log, const RunDisplay& display);

}  // namespace rudra::session
