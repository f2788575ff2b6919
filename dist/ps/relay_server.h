// A leaf (or inner) parameter server of Rudra-adv's tree (dist/ps/topology.h). Toward its children
// (the learners of its node, and leaf PSs below it) it speaks the PS protocol of
// dist/transport/messages.h; toward its parent it is one child that pushes sums and pulls weights:
// - gradients from the children are summed in place until the sum holds the relay's share of an
//   update, and it goes up once the previous sum has left (one sum in flight, sent by a thread of its own: a blocking send up while the parent sends
//   weights down would otherwise wait for each other); each sum names its gradients' learners
//   and timestamps, so the root counts, clocks and modulates them as with one PS;
// - one pull is always waiting at the parent for weights newer than the relay's ("reply once you
//   have timestamp ts + 1"), so new weights come down the tree as soon as the root has them;
//   they are kept as the parent's reply message itself and forwarded to the children unchanged
//   (no copy), and a child's pull is answered from them with the PS's rules (nothing newer, or
//   deferred until the timestamp a hardsync learner waits for).
// Every gradient comes with the weights' single timestamp of the whole tree: the root's.
// When the parent says stop, the relay answers its children stop, waits for their goodbyes (at
// most the peer timeout), and says goodbye to its parent, naming the children that never did.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/transport/heartbeat.h"
#include "dist/transport/transport.h"
#include "dist/transport/wire.h"

namespace rudra::dist {

class Timeline;

struct RelayConfig {
    int parent = 0;
    int stats_rank = 1;
    std::vector<int> children;  // learners and leaf PSs that push and pull here
    size_t param_floats = 0;
    // Gradients a sum holds before it goes up: this relay's share of an update, c * (learners
    // below it) / lambda (at least 1). Hardsync and 1-softsync send one sum per learner round,
    // so the root takes as many messages per update as it has children; async sends each
    // gradient alone, as each is an update of its own.
    int64_t share = 1;
    double peer_timeout_s = kDefaultPeerTimeoutS;
    Timeline* timeline = nullptr;
    // adv*: the learners get the weights from the broadcast tree, so the relay takes none; its
    // one pull waits at the parent for the run's end (a stop answers it).
    bool pulls_weights = true;
    // --wire: the format of the gradients and sums it takes, of the sum it sends up and of the
    // weights it passes down (as the parent sent them). Sums are added in FP32 and rounded once,
    // as they go up.
    Wire wire = Wire::Fp32;
};

struct RelaySummary {
    int64_t gradients = 0;  // taken from the children
    int64_t sums = 0;       // sent up
    int64_t weights_in = 0;  // new weights from the parent
    int64_t weight_replies = 0, empty_replies = 0;  // answers to the children's pulls
};

// Adds a gradient (or a child's sum) of n floats into a leaf PS's sum: the first one copied, the
// others added, in the order they come. The replay of a virtual cluster's record builds its sums
// with it too, so that they are the leaf PS's to the bit.
void add_to_relayed_sum(float* sum, const float* grad, long n, bool first);

// Runs until the parent says stop and the children are done; `heartbeat` tells of the parent's
// (rank 0's) silence. The last report to the statistics server carries the relay's traffic.
RelaySummary run_relay(Transport& transport, const RelayConfig& config, Heartbeat& heartbeat,
                       const std::function<void(const std::string&)>& log);

}  // namespace rudra::dist
