// The statistics server role: collects training loss and timing from the learners, receives the
// weights from the PS at every epoch boundary, tests them, and writes one JSON line per epoch,
// telling the PS when it is written. Learners the PS declares lost, and a run stopped early, are
// event lines of their own. It ends after the final epoch once every learner has sent its last
// report or been lost, or when the run stops early; its last message tells the PS it is done.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/transport/heartbeat.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

class Timeline;

struct TestResult {
    double accuracy = 0.0, loss = 0.0;
    double top5 = -1.0;  // -1: fewer than 5 classes
    std::vector<std::pair<std::string, double>> layers;  // the test net's Accuracy layers
};

struct StatsConfig {
    int ps_rank = 0;
    bool has_ps = true;  // false: rank ps_rank is the first learner of a decentralized run
    int learners = 1;  // ranks whose last report ends the run: the learners (and adv's leaf PSs)
    std::vector<std::string> roles;  // by rank, for the traffic line (empty: PS, statistics server, learners)
    size_t param_floats = 0;
    std::string protocol;
    int64_t start_samples = 0;  // a warm start's samples, so that its first epoch's images/s is right
    double start_elapsed_s = 0.0;  // a resumed run's time so far
    int64_t last_logged_epoch = 0;  // a resumed run's metrics already hold the epochs up to this one
    Heartbeat* heartbeat = nullptr;  // told of every message
    Timeline* timeline = nullptr;    // --timeline: a span per epoch tested
    double peer_timeout_s = kDefaultPeerTimeoutS;    // a learner silent this long in the middle of a message is skipped
    // Called with every epoch's line (already written to the metrics file).
    std::function<void(const nlohmann::ordered_json& epoch)> on_epoch;
    // Called after each learner report: the mini-batches all learners have pushed in this run so
    // far, and the mean training loss since the last epoch line (for a progress display).
    std::function<void(int64_t minibatches, double loss)> on_report;
};

// The last line, {"event":"traffic","ranks":[...]}, has each rank's traffic (dist/transport/traffic.h) and,
// from its kRankStarted message, its start-up time and resident memory.
// `log` appends one JSON object (an epoch line) to the metrics file; `test` evaluates weights on
// the test set.
void run_stats_server(Transport& transport, const StatsConfig& config,
                      const std::function<TestResult(const float* weights)>& test,
                      const std::function<void(const nlohmann::ordered_json& epoch)>& log);

}  // namespace rudra::dist
