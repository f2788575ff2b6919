#include "dist/methods/decentralized.h"

#include "dist/transport/traffic.h"

namespace rudra::dist {

void StatsLink::send_epoch(EpochWeightsHeader h, const float* weights, size_t n) {
    h.traffic = traffic_report(t_, sums_);
    pack(out_, h, weights, n);
    t_.send(stats_rank_, kEpochWeights, out_.data(), out_.size());
    ++epochs_sent_;
}

void StatsLink::stopped(int64_t epoch, int64_t steps, double elapsed_s) {
    pack(out_, RunEnd{kEndSignal, epoch, steps, elapsed_s});
    t_.send(stats_rank_, kRunEnd, out_.data(), out_.size());
}

void StatsLink::lost_peer(const SilentPeer& lost, int live_learners, int64_t epoch, int64_t steps, double elapsed_s) {
    if (lost.rank == stats_rank_ || lost.rank < 0) return;
    pack(out_, LearnerLost{lost.rank, elapsed_s, lost.silent_s, live_learners, 1});
    t_.send(stats_rank_, kLearnerLost, out_.data(), out_.size());
    pack(out_, RunEnd{kEndLearnerLost, epoch, steps, elapsed_s});
    t_.send(stats_rank_, kRunEnd, out_.data(), out_.size());
}

// Received by tag: a receive of any tag could take a heartbeat from the heartbeat thread.
bool StatsLink::await_done(const KeepWaiting& keep_waiting) {
    std::vector<char> in;
    for (int64_t e = 0; e <= epochs_sent_; ++e)
        if (!t_.recv_while(stats_rank_, e < epochs_sent_ ? kEpochLogged : kStatsDone, in, keep_waiting)) return false;
    return true;
}

}  // namespace rudra::dist
