// The messages to the statistics server from the rank that reports the run: the parameter
// server, or a decentralized method's first learner. An epoch's weights, a lost peer, the run's
// early end, and (decentralized) the wait for the server's last word.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "dist/transport/messages.h"
#include "dist/transport/sum_group.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

class StatsLink {
public:
    // Sends `bytes` with `tag` to the statistics server; false when it gave up (the server is
    // lost). The parameter server's gives up on a silent server; by default, a plain send.
    using Send = std::function<bool(int tag, std::vector<char>& bytes)>;
    // `sums`: the sum group whose traffic the epochs' reports count (none for the PS).
    StatsLink(Transport& transport, int stats_rank, const SumGroup* sums, Send send = {});
    // An epoch's weights. `h.traffic` gets the transport's counts; its weight and empty reply
    // counts are the caller's.
    bool send_epoch(EpochWeightsHeader h, const float* weights, size_t n);
    // The run ends early (why: kEndSignal or kEndLearnerLost) after `steps` steps.
    bool run_end(int64_t why, int64_t epoch, int64_t steps, double elapsed_s);
    bool stopped(int64_t epoch, int64_t steps, double elapsed_s) { return run_end(kEndSignal, epoch, steps, elapsed_s); }
    // A learner or leaf PS lost: the server logs it (with the learners still live, and whether
    // the run cannot go on).
    bool learner_lost(const LearnerLost& lost);
    // A decentralized run's peer lost: the server (unless it is the lost one) logs the loss and
    // the run's end.
    void lost_peer(int rank, double silent_s, int live_learners, int64_t epoch, int64_t steps, double elapsed_s);
    // At the end: the server acknowledges each epoch sent, then says it is done. False when
    // keep_waiting said stop first.
    bool await_done(const KeepWaiting& keep_waiting);
    int rank() const { return stats_rank_; }

private:
    bool send(int tag);

    Transport& t_;
    const int stats_rank_;
    const SumGroup* sums_;
    Send send_;
    int64_t epochs_sent_ = 0;
    std::vector<char> out_;
};

}  // namespace rudra::dist
