// A distributed run's checkpoint: a snapshot (weights, solver history) whose metadata holds what
// else the run needs to go on: its settings, the epochs and time so far, and the update rule's
// counters and statistics (timestamp, samples, staleness histograms and vector clocks, and each
// learner's position in its sample stream). The parameter server writes it; every rank of a
// resumed run reads it.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/snapshot.h"
#include "dist/run/options.h"

namespace rudra::dist::run {

struct DistCheckpoint {
    std::string path;
    nn::Snapshot snapshot;
    nlohmann::json meta;

    int64_t epoch() const { return meta.at("epoch").get<int64_t>(); }
    int64_t samples() const { return meta.at("rule").at("samples").get<int64_t>(); }
    double elapsed_s() const { return meta.at("elapsed_s").get<double>(); }
    int learners() const { return meta.at("settings").at("learners").get<int>(); }
    // Gradients of learner `index` in the checkpoint's updates (0 for a learner it did not have).
    int64_t applied(int index) const;
};

// DIR/checkpoint.rudra
std::string checkpoint_path(const std::string& output_dir);

// `file_or_dir`: a checkpoint, or an output directory holding checkpoint.rudra. Throws naming
// the file and the problem (missing, corrupt, not a distributed run's checkpoint).
DistCheckpoint read_dist_checkpoint(const std::string& file_or_dir);
// The same from the file's bytes; `path` names them in errors.
DistCheckpoint parse_dist_checkpoint(const std::string& bytes, const std::string& path);

// The settings that define a run, as the checkpoint keeps them.
nlohmann::ordered_json run_settings(const DistOptions& o, int learners);

// A resumed run takes the checkpoint's settings for every option not on the command line. Errors
// name the checkpoint and the setting.
// Options that define the run (solver, data, protocol, n, batch, rates, seed...) must match if
// given; --epochs (the total), the output, threads, waits, kernels and fault settings may change.
void apply_checkpoint_settings(DistOptions& o, const DistCheckpoint& ck);

}  // namespace rudra::dist::run
