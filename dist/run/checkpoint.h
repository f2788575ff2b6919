// A distributed run's checkpoint (session/checkpoint.h): its settings, the epochs and time so far,
// and the update rule's counters and statistics (timestamp, samples, staleness histograms and
// vector clocks, and each learner's position in its sample stream). Rank 0 writes it; every rank
// of a resumed run reads it.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "session/checkpoint.h"
#include "dist/run/options.h"

namespace rudra::dist::run {

// The checkpoint format is the single-node run's too (session/checkpoint.h); a distributed run
// resumes only a distributed run's.
using DistCheckpoint = session::Checkpoint;

// DIR/checkpoint.rudra
std::string checkpoint_path(const std::string& output_dir);
// DIR/final.rudra: the model at a finished run's end.
std::string final_snapshot_path(const std::string& output_dir);

// `file_or_dir`: a checkpoint, or an output directory holding checkpoint.rudra. Throws naming
// the file and the problem (missing, corrupt, not a distributed run's checkpoint).
DistCheckpoint read_dist_checkpoint(const std::string& file_or_dir);
// The same, for a checkpoint of any run (a single-node run's snapshots included).
session::Checkpoint read_any_checkpoint(const std::string& file_or_dir);
// The same as read_dist_checkpoint from the file's bytes; `path` names them in errors.
DistCheckpoint parse_dist_checkpoint(const std::string& bytes, const std::string& path);

// The settings that define a run, as the checkpoint keeps them.
nlohmann::ordered_json run_settings(const DistOptions& o, int learners);

// A resumed run takes the checkpoint's settings for every option not on the command line. Errors
// name the checkpoint and the setting.
// Options that define the run (solver, data, protocol, n, batch, rates, seed...) must match if
// given; --epochs (the total), the output, threads, waits, kernels and fault settings may change.
void apply_checkpoint_settings(DistOptions& o, const DistCheckpoint& ck);
// A replay takes the recorded run's settings (`settings`, from the schedule record at `path`),
// the warm start included; an option on the command line must agree with them.
void apply_recorded_settings(DistOptions& o, const nlohmann::json& settings, const std::string& path);

}  // namespace rudra::dist::run
