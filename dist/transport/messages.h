// The wire format between roles: a fixed header (plain struct, 8-byte fields) followed, for
// weights and gradients, by the flat parameter buffer as floats, FP32 or BF16 (dist/transport/wire.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist/transport/wire.h"

namespace rudra::dist {

enum Tag : int {
    kWeightsRequest = 1,  // learner -> PS: my timestamp, and the oldest timestamp I accept
    kWeightsReply = 2,    // PS -> learner: the current timestamp, with the weights if newer, or stop
    kGradient = 4,        // learner -> PS: gradient and the timestamp it was computed from
    kBye = 5,             // learner -> PS: my last message
    kLearnerReport = 6,   // learner -> statistics server: loss and timing totals
    kEpochWeights = 7,    // PS -> statistics server: the weights at an epoch boundary
    kKernelChoices = 8,   // first learner -> the other learners: the `auto` backends it chose (text)
    kHeartbeat = 9,       // any rank -> its peers, every second, empty (dist/transport/heartbeat.h)
    kLearnerLost = 10,    // PS -> statistics server: a learner stopped answering
    kEpochLogged = 11,    // statistics server -> PS: an epoch's line is in the metrics file
    kRunEnd = 12,         // PS -> statistics server: the run stops before its last epoch
    kStatsDone = 13,      // statistics server -> PS: its last line is written
    kHeartbeatCount = 14, // any rank -> the others, at the end: heartbeats it sent to each
    kGossipRequest = 15,  // gossip-pull learner -> a peer: send me your model (empty)
    kGossipModel = 16,    // gossip learner -> a peer: my model (pull's answer, or push's gift)
    kRankStarted = 17,    // any rank -> statistics server, once training starts: RankStarted
    kGradientSum = 18,    // leaf PS -> its parent (adv): a sum of gradients, and whose they are
    kBroadcastWeights = 19,  // root PS or learner -> learners (adv*): a WeightsReply with the weights, or stop
    kChildDone = 20,      // leaf PS -> its parent (adv): this rank (int64) below me said goodbye
    kRunIdentity = 21,    // rank 0 -> every rank, at start, once it holds the output folder: the run's id (text)
    kReadyToTrain = 22,   // any rank -> rank 0 once set up (empty), and rank 0 -> every rank once all are: go
};

// What a rank took to get going: the seconds from its process's start until it was ready (MPI,
// data, nets) and until training started (every rank ready), and its resident memory then: all
// of it, and the part private to it (anonymous memory: without the node's shared copy of the
// data set, which a rank counts as resident once it has read those pages).
struct RankStarted {
    double ready_s, startup_s;
    int64_t resident_kb, private_kb;
};

struct WeightsRequest {
    int64_t have_ts;  // newest timestamp the learner holds (-1: none)
    int64_t min_ts;   // reply only once the PS has reached this timestamp (hardsync)
};

struct WeightsReply {
    int64_t ts;
    int64_t has_weights;
    int64_t stop;  // 1: training is over, nothing else follows
};

struct GradientHeader {
    int64_t ts;
    double loss;
};

// A relayed sum (Rudra-adv): the header, the summed gradient's floats, then `count` entries
// naming each gradient in it, so that the root counts and clocks them one by one. The floats come
// first so that the sum is accumulated in place, at a fixed offset, however many entries follow.
struct GradientSumHeader {
    int64_t count;
};

struct GradientSumEntry {
    int64_t learner_rank;
    int64_t ts;
};

// Whether a relayed sum of `count` entries after `float_bytes` of floats is exactly `bytes` long.
// Nothing is computed from `count` (the sender's word: a huge one would wrap a product into a
// plausible size, and the entries be read past the message).
inline bool gradient_sum_fits(size_t bytes, size_t float_bytes, int64_t count) {
    const size_t fixed = sizeof(GradientSumHeader) + float_bytes;
    if (count < 1 || bytes < fixed || (bytes - fixed) % sizeof(GradientSumEntry) != 0) return false;
    return static_cast<uint64_t>(count) == (bytes - fixed) / sizeof(GradientSumEntry);
}

// A rank's traffic so far (dist/transport/traffic.h), inside the messages it sends the statistics server.
struct TrafficReport {
    int64_t sent_messages, sent_bytes, received_messages, received_bytes;  // point to point
    int64_t sums, sum_bytes;                // posted to the learners' sums (all-reduce, gossip)
    int64_t weight_replies, empty_replies;  // the PS's replies to pulls: with weights, or "nothing newer"
};

struct LearnerReport {
    double loss_sum;      // since the previous report
    int64_t loss_count;
    double compute_s;     // totals since start
    double wait_s;
    int64_t minibatches;
    int64_t done;         // 1 on the last report
    TrafficReport traffic;
};

struct EpochWeightsHeader {
    int64_t epoch;
    int64_t ts;
    int64_t samples;         // gradients' samples the PS has taken so far
    double elapsed_s;        // since the PS started
    double staleness_mean;   // over the gradients of this epoch
    int64_t staleness_max;
    int64_t drops;           // 1: the PS refuses some gradients (backups, a staleness bound)
    int64_t dropped;         // and this epoch's dropped ones
    int64_t final;           // 1 for the last epoch
    int64_t replay;          // 1: sent again by a resumed run (logged only if the metrics lack it)
    int64_t has_spread;      // 1: decentralized learners; `spread` is their models' largest distance from the average
    double spread;
    TrafficReport traffic;   // the sender's (rank 0's) so far
};

struct LearnerLost {
    int64_t rank;
    double elapsed_s;     // since the run started
    double silent_s;      // how long it had been silent
    int64_t live;         // learners still training
    int64_t stops_run;    // 1: the protocol cannot go on without it (hardsync)
};

struct RunEnd {
    int64_t reason;       // RunEndReason
    int64_t epoch;        // epochs completed
    int64_t ts;
    double elapsed_s;
};

enum RunEndReason : int64_t { kEndSignal = 1, kEndLearnerLost = 2 };

// Header + optional float payload packed into one buffer (reused between sends), the floats in
// the wire's format.
template <class H>
void pack(std::vector<char>& out, const H& header, const float* floats = nullptr, size_t count = 0,
          Wire wire = Wire::Fp32) {
    out.resize(sizeof(H) + wire_bytes(wire, count));
    std::memcpy(out.data(), &header, sizeof(H));
    wire_encode(wire, floats, count, out.data() + sizeof(H));
}

template <class H>
H unpack_header(const std::vector<char>& in) {
    if (in.size() < sizeof(H)) throw std::runtime_error("malformed message: shorter than its header");
    H h;
    std::memcpy(&h, in.data(), sizeof(H));
    return h;
}

// Whether a message is a header H and `count` floats in the wire's format.
template <class H>
bool holds_floats(const std::vector<char>& in, size_t count, Wire wire = Wire::Fp32) {
    return in.size() >= sizeof(H) && in.size() - sizeof(H) == wire_bytes(wire, count);
}

// Copies the payload into `dst` as FP32, checking that it holds exactly `count` floats.
template <class H>
void unpack_floats(const std::vector<char>& in, float* dst, size_t count, Wire wire = Wire::Fp32) {
    if (!holds_floats<H>(in, count, wire))
        throw std::runtime_error("malformed message: " + std::to_string(in.size()) + " bytes, expected a " +
                                 std::to_string(sizeof(H)) + "-byte header and " + std::to_string(count) + " " +
                                 wire_name(wire) + " values");
    wire_decode(wire, in.data() + sizeof(H), count, dst);  // dst may be null when empty
}

}  // namespace rudra::dist
