// A run's checkpoint, one format for `rudra train` and `rudra dist`: a snapshot (weights, solver
// history, data position; nn/snapshot.h) whose metadata, as JSON, says what else the run needs to
// go on: the method that wrote it ("single" for `rudra train`, else the protocol), why, the epochs
// completed, the settings that define the run, and the method's counters ("rule": timestamp,
// samples, each learner's "applied"; the parameter-server protocols add their statistics).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/snapshot.h"

namespace rudra::session {

// The method name of a single-node run's checkpoints.
inline constexpr const char* kSingleNode = "single";

struct CheckpointFacts {
    std::string method;  // kSingleNode, or the protocol ("hardsync", "4-softsync", "allreduce"...)
    std::string reason;  // "epoch", "periodic", "snapshot", "request", "signal", "end", "learner lost"
    int64_t epoch = 0;   // epochs completed
    // The run's time so far and the wall-clock time of writing; a single-node run leaves them out,
    // so that the same run writes the same bytes.
    bool timed = true;
    double elapsed_s = 0.0;
    nlohmann::ordered_json settings, rule;
    // More that the method needs to go on (a replay's place in its record), under "state"; null: none.
    nlohmann::ordered_json state;
};

// The metadata text of a checkpoint with these facts.
std::string checkpoint_metadata(const CheckpointFacts& facts);

struct Checkpoint {
    std::string path;
    nn::Snapshot snapshot;
    nlohmann::json meta;
    bool plain = false;  // a snapshot without metadata, read as a single-node checkpoint

    std::string method() const { return meta.value("protocol", std::string()); }
    bool single_node() const { return method() == kSingleNode; }
    int64_t epoch() const { return meta.at("epoch").get<int64_t>(); }
    int64_t samples() const { return meta.at("rule").at("samples").get<int64_t>(); }
    int64_t timestamp() const { return meta.at("rule").value("timestamp", int64_t{0}); }
    double elapsed_s() const { return meta.value("elapsed_s", 0.0); }
    int learners() const { return meta.at("settings").at("learners").get<int>(); }
    // Gradients (or steps) of learner `index` in the checkpoint (0 for a learner it did not have).
    int64_t applied(int index) const;
};

// A checkpoint from a snapshot file's bytes; `path` names them in errors. Everything a resumed run
// reads from the metadata is checked here (and by `check_rule`: whether the caller can resume
// this method's checkpoints, and its own counters), so that a checkpoint is refused with its
// name, not later by a rank that trusted it. A snapshot
// without metadata (written before checkpoints carried it) reads as a single-node checkpoint at
// its iteration and data position.
Checkpoint parse_checkpoint(const std::string& bytes, const std::string& path,
                            const std::function<void(const Checkpoint&)>& check_rule = {});
Checkpoint read_checkpoint(const std::string& path, const std::function<void(const Checkpoint&)>& check_rule = {});

}  // namespace rudra::session
