// The wire format between roles: a fixed header (plain struct, 8-byte fields) followed, for
// weights and gradients, by the flat parameter buffer as floats.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace rudra::dist {

enum Tag : int {
    kWeightsRequest = 1,  // learner -> PS: my timestamp, and the oldest timestamp I accept
    kWeightsReply = 2,    // PS -> learner: the current timestamp, with the weights if newer
    kStop = 3,            // PS -> learner: training is over
    kGradient = 4,        // learner -> PS: gradient and the timestamp it was computed from
    kBye = 5,             // learner -> PS: my last message
    kLearnerReport = 6,   // learner -> statistics server: loss and timing totals
    kEpochWeights = 7,    // PS -> statistics server: the weights at an epoch boundary
    kKernelChoices = 8,   // first learner -> the other learners: the `auto` backends it chose (text)
};

struct WeightsRequest {
    int64_t have_ts;  // newest timestamp the learner holds (-1: none)
    int64_t min_ts;   // reply only once the PS has reached this timestamp (hardsync)
};

struct WeightsReply {
    int64_t ts;
    int64_t has_weights;
};

struct GradientHeader {
    int64_t ts;
    double loss;
};

struct LearnerReport {
    double loss_sum;      // since the previous report
    int64_t loss_count;
    double compute_s;     // totals since start
    double wait_s;
    int64_t minibatches;
    int64_t done;         // 1 on the last report
};

struct EpochWeightsHeader {
    int64_t epoch;
    int64_t ts;
    int64_t samples;         // gradients' samples the PS has taken so far
    double elapsed_s;        // since the PS started
    double staleness_mean;   // over the gradients of this epoch
    int64_t staleness_max;
    int64_t final;           // 1 for the last epoch
};

// Header + optional float payload packed into one buffer (reused between sends).
template <class H>
void pack(std::vector<char>& out, const H& header, const float* floats = nullptr, size_t count = 0) {
    out.resize(sizeof(H) + count * sizeof(float));
    std::memcpy(out.data(), &header, sizeof(H));
    if (count) std::memcpy(out.data() + sizeof(H), floats, count * sizeof(float));
}

template <class H>
H unpack_header(const std::vector<char>& in) {
    if (in.size() < sizeof(H)) throw std::runtime_error("malformed message: shorter than its header");
    H h;
    std::memcpy(&h, in.data(), sizeof(H));
    return h;
}

// Copies the payload into `dst`, checking that it holds exactly `count` floats.
template <class H>
void unpack_floats(const std::vector<char>& in, float* dst, size_t count) {
    if (in.size() != sizeof(H) + count * sizeof(float))
        throw std::runtime_error("malformed message: payload of " + std::to_string(in.size() - sizeof(H)) +
                                 " bytes, expected " + std::to_string(count * sizeof(float)));
    std::memcpy(dst, in.data() + sizeof(H), count * sizeof(float));
}

}  // namespace rudra::dist
