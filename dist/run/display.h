// What the statistics server shows while a `rudra dist` run goes: a readable line per epoch (and
// per lost learner or stop), or with --json the metrics lines as metrics.jsonl has them; and the
// progress within an epoch from the learners' reports, as a redrawn bar (as `rudra train` shows)
// or a line every 30 seconds for batch logs.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dist/run/options.h"
#include "session/progress.h"

namespace rudra::dist::run {

// "epoch 2/10: test accuracy 0.7120 (loss 0.84), train loss 1.23, 2,255 images/s, ..."
std::string readable_metrics_line(const nlohmann::ordered_json& line, int epochs);

class DistDisplay {
public:
    // `batch`: the learners' mini-batch; `start_samples`: what a resumed or warm-started run had
    // trained before this start.
    DistDisplay(const DistOptions& o, int64_t samples_per_epoch, int batch, int64_t start_samples);
    void metrics_line(const nlohmann::ordered_json& line);
    void learners_report(int64_t minibatches, double loss);

private:
    bool json_, lines_, over_ = false;  // over_: the last epoch, or a stop, was shown
    int epochs_, batch_;
    int64_t samples_per_epoch_, start_samples_;
    session::ProgressBar bar_;
    std::chrono::steady_clock::time_point started_, last_line_;
};

}  // namespace rudra::dist::run
