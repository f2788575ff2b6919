// What the decentralized methods (all-reduce, gossip) share: the settings of a learner in a sum
// group and its watch over its peers (the first learner's link to the statistics server is the
// PS's StatsLink).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dist/ps/run_common.h"
#include "dist/ps/stats_link.h"
#include "dist/transport/messages.h"
#include "dist/transport/sum_group.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

// A rank silent longer than the peer timeout (dead or stopped), and for how long; rank -1: none.
struct SilentPeer {
    int rank = -1;
    double silent_s = 0.0;
};

struct DecentralizedConfig : RunCommon {
    int64_t batch = 0;        // each learner's mini-batch
    int64_t start_steps = 0;  // a resumed run's steps so far (each learner's, at its last epoch boundary)
    int report_every = 10;    // steps between loss reports to the statistics server
    // A rank that has been silent too long (dead or stopped), or -1: asked while waiting, so that
    // a lost learner ends the job with its name instead of hanging it. Empty: never asked.
    std::function<SilentPeer()> silent_peer;
    // Asked on every learner before each step; the answers are summed over the learners, so that
    // they stop together when any of them says true.
    std::function<bool()> stop_requested;
    // --wire: the format of the gradient sums (all-reduce) and of the models the peers exchange
    // (gossip). The stop requests, counts and hashes summed beside them stay FP32.
    Wire wire = Wire::Fp32;
};

// The waits of a decentralized learner: keep_waiting() asks `silent_peer` and remembers the rank
// it names; gone() is the error that then ends the run.
class PeerWatch {
public:
    PeerWatch(std::function<SilentPeer()> silent_peer, std::string method)
        : silent_peer_(std::move(silent_peer)), method_(std::move(method)) {}
    KeepWaiting keep_waiting() {
        return [this] {
            if (silent_peer_) lost_ = silent_peer_();
            return lost_.rank < 0;
        };
    }
    // The peer behind `e`: the one a wait gave up on, or the one the transport named (a send to a
    // dead rank fails before the peer timeout).
    SilentPeer lost(const PeerError& e) const { return lost_.rank >= 0 ? lost_ : SilentPeer{e.peer(), 0.0}; }
    PeerError gone() const {
        return PeerError(lost_.rank, method_ + ": rank " + std::to_string(lost_.rank) +
                                         " stopped answering (silent longer than the peer timeout); " + method_ +
                                         " cannot go on without it");
    }

private:
    std::function<SilentPeer()> silent_peer_;
    std::string method_;
    SilentPeer lost_;
};

}  // namespace rudra::dist
