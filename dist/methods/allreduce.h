// All-reduce SGD, with no parameter server: every learner computes a gradient on its own
// mini-batch, the gradients are summed across the learners in buckets that start while the
// backward pass is still running (the last layers' first, as Horovod and PyTorch DDP do), and
// every learner applies the same averaged gradient with its own solver, so that the models stay
// identical. Learner 0 sends the weights to the statistics server at each epoch boundary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "session/run_loop.h"
#include "dist/methods/decentralized.h"
#include "dist/transport/sum_group.h"
#include "dist/transport/transport.h"
#include "nn/net.h"

namespace rudra::dist {

class Timeline;

using FloatRange = std::pair<size_t, size_t>;  // [begin, end) of the gradient arena

// Groups the ranges of the gradient arena that become final, layer by layer from the last, into
// buckets of at least `min_floats` contiguous floats; each full bucket is handed to `send`.
class GradientBuckets {
public:
    // final_after[i]: the ranges whose gradients are final once layer i's backward pass ends.
    GradientBuckets(std::vector<std::vector<FloatRange>> final_after, size_t min_floats);
    void layer_done(size_t layer, const std::function<void(FloatRange)>& send);
    void flush(const std::function<void(FloatRange)>& send);  // the last, partial bucket
    size_t layers() const { return final_after_.size(); }

private:
    std::vector<std::vector<FloatRange>> final_after_;
    size_t min_floats_;
    FloatRange pending_{0, 0};
};

// For each layer of `net`, the ranges of its parameter arena (padding included, so that the
// ranges tile the arena) whose gradients are final once that layer's backward pass ends.
std::vector<std::vector<FloatRange>> final_gradients_by_layer(const nn::Net& net);

// True when every member of `group` holds the same n weights, bit for bit (one small sum; every
// member must call it). The all-reduce learners check it at each epoch boundary.
bool models_agree(SumGroup& group, const float* weights, size_t n, const KeepWaiting& keep_waiting = {});

struct AllreduceWork {
    size_t param_floats = 0;
    float* gradients = nullptr;
    std::vector<std::vector<FloatRange>> final_after;  // per layer, as GradientBuckets takes them
    // One mini-batch: forward, then backward calling after_layer(i) as each layer ends; returns
    // the loss.
    std::function<double(const std::function<void(size_t)>& after_layer)> compute;
    std::function<void(int64_t iteration)> apply;  // the solver's step with the averaged gradient
    std::function<const float*()> weights;         // the model, for the statistics server
};

// stop_requested's answers are summed with each step's gradients, so that the learners stop
// together after the same step.
struct AllreduceConfig : DecentralizedConfig {
    int64_t start_samples = 0;       // a warm-started or resumed run's samples so far
    size_t bucket_floats = 1 << 18;  // 1 MiB buckets
    // Learner 0, after each epoch's weights have gone to the statistics server, every
    // checkpoint_every (steps or seconds; 0: never), and when the run stops
    // early: the learners' common state is a checkpoint (reason "epoch", "periodic" or "signal").
    // Learner 0 alone decides: every learner holds the same weights and solver history.
    session::CheckpointEvery checkpoint_every;
    std::function<void(const std::string& reason, int64_t steps, int64_t samples, double elapsed_s)> checkpoint;
};

struct AllreduceSummary {
    int64_t steps = 0;  // this run's
    int64_t samples = 0;  // all, start_samples included
    bool stopped = false;  // by stop_requested, before the last epoch
    double compute_s = 0.0, wait_s = 0.0;  // wait: the all-reduce time not hidden by the backward pass
};

// Runs from start_samples to `epochs` epochs of λ·batch samples per step. Learner 0 sends the weights to the
// statistics server at every epoch boundary and receives its acknowledgements and final word.
AllreduceSummary run_allreduce_learner(Transport& transport, SumGroup& group, const AllreduceConfig& config,
                                       const AllreduceWork& work);

}  // namespace rudra::dist
