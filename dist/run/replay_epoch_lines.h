// The statistics server's epoch lines, from a replay (dist/run/replay.cpp): at each epoch's end
// the PS's weights are evaluated on the test set and a line goes to OUT/metrics.jsonl and stdout.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dist/ps/protocol.h"
#include "dist/ps/update_rule.h"
#include "dist/run/options.h"
#include "dist/run/roles.h"
#include "session/metrics_log.h"
#include "session/training_session.h"

namespace rudra::dist::run {

// Elapsed time is the record's (a virtual cluster's simulated time) where it has one, else the
// replay's own. A resumed replay goes on from `resumed` (what state() gave), appending to the log.
class EpochLines {
public:
    EpochLines(const DistOptions& o, const Setup& s, const data::TrainTest& sets, const dist::Protocol& protocol,
               const std::string& record, bool simulated, const nlohmann::json* resumed);
    nlohmann::ordered_json state() const;
    void loss(double l) {
        loss_sum_ += l;
        ++losses_;
    }
    // After each update (at `time_s` simulated seconds, -1: not simulated): the lines of the
    // epochs it ended.
    void after_update(UpdateRule& rule, const nn::ParamStore& weights, double time_s);

private:
    double elapsed() const;

    session::TrainingSession test_;
    session::MetricsLog log_;
    std::string protocol_;
    int64_t epoch_samples_;
    int epochs_;
    std::chrono::steady_clock::time_point started_;
    int64_t next_, last_samples_ = 0;
    double loss_sum_ = 0, last_elapsed_ = 0, last_time_s_ = -1, offset_s_ = 0;
    int64_t losses_ = 0;
};

}  // namespace rudra::dist::run
