#include "dist/ps/stats_link.h"

#include <utility>

#include "dist/transport/traffic.h"

namespace rudra::dist {

StatsLink::StatsLink(Transport& transport, int stats_rank, const SumGroup* sums, Send send)
    : t_(transport), stats_rank_(stats_rank), sums_(sums), send_(std::move(send)) {}

bool StatsLink::send(int tag) {
    if (send_) return send_(tag, out_);
    t_.send(stats_rank_, tag, out_.data(), out_.size());
    return true;
}

bool StatsLink::send_epoch(EpochWeightsHeader h, const float* weights, size_t n) {
    const int64_t weight_replies = h.traffic.weight_replies, empty_replies = h.traffic.empty_replies;
    h.traffic = traffic_report(t_, sums_);
    h.traffic.weight_replies = weight_replies;
    h.traffic.empty_replies = empty_replies;
    pack(out_, h, weights, n);
    ++epochs_sent_;
    return send(kEpochWeights);
}

bool StatsLink::run_end(int64_t why, int64_t epoch, int64_t steps, double elapsed_s) {
    pack(out_, RunEnd{why, epoch, steps, elapsed_s});
    return send(kRunEnd);
}

bool StatsLink::learner_lost(const LearnerLost& lost) {
    pack(out_, lost);
    return send(kLearnerLost);
}

void StatsLink::lost_peer(int rank, double silent_s, int live_learners, int64_t epoch, int64_t steps,
                          double elapsed_s) {
    if (rank == stats_rank_ || rank < 0) return;
    learner_lost(LearnerLost{rank, elapsed_s, silent_s, live_learners, 1});
    run_end(kEndLearnerLost, epoch, steps, elapsed_s);
}

// Received by tag: a receive of any tag could take a heartbeat from the heartbeat thread.
bool StatsLink::await_done(const KeepWaiting& keep_waiting) {
    std::vector<char> in;
    for (int64_t e = 0; e <= epochs_sent_; ++e)
        if (!t_.recv_while(stats_rank_, e < epochs_sent_ ? kEpochLogged : kStatsDone, in, keep_waiting)) return false;
    return true;
}

}  // namespace rudra::dist
