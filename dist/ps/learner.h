// The learner role: an SGD process that computes gradients on the newest weights it holds.
// Two communication threads use blocking transport calls: pullWeights asks the PS for weights
// newer than the learner's own and receives them into a communication buffer; pushGradient
// sends each gradient with the timestamp it was computed from, one in flight at a time and
// never merged. Modes: base (waits for each pull before computing: Rudra-base) and overlap
// (computes on what it holds while the next pull runs). Under adv* the weights come down a
// broadcast tree instead of being pulled: a receiving thread takes each version from the
// learner's broadcast parent, forwards it to its broadcast children, and leaves it for the
// compute loop, which computes on the newest it holds and never waits for weights (except for
// hardsync's next timestamp, and the first version).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/transport/transport.h"
#include "dist/transport/wire.h"

namespace rudra::dist {

class SumGroup;
class Timeline;

struct LearnerConfig {
    int ps_rank = 0;
    int stats_rank = 1;
    bool overlap = false;
    bool synchronous = false;  // hardsync: wait for the timestamp after the last gradient pushed
    // A staleness bound: compute only on the weights the last pull brought, in overlap mode too
    // (the pull still leaves at once).
    bool wait_for_pull = false;
    int report_every = 10;     // mini-batches between reports to the statistics server
    Wire wire = Wire::Fp32;    // --wire: the format of the weights pulled and the gradients pushed
    // adv*: the rank the weights come from (-1: pull them from ps_rank), and the learners this one
    // forwards them to; a child that does not take a version is left out once `peer_alive` says
    // it is lost (without `peer_alive`: after peer_timeout_s), and a version from a parent is
    // given up likewise.
    int broadcast_parent = -1;
    std::vector<int> broadcast_children;
    double peer_timeout_s = kDefaultPeerTimeoutS;
    // Whether a rank still answers (its heartbeats): how long a large version takes to arrive
    // says nothing of its sender.
    std::function<bool(int rank)> peer_alive;
    Timeline* timeline = nullptr;  // --timeline: compute, wait, pull and push spans
    std::function<void(const std::string&)> log;  // adv*: children left out, parents lost (optional)
};

// The engine side, supplied by the caller: load weights into the net, compute one mini-batch.
struct LearnerWork {
    size_t param_floats = 0;
    std::function<void(const float* weights)> load_weights;  // copies pulled weights into the model
    // When set, used instead of load_weights: the model reads its weights from `weights` from the
    // next compute on (the paper's pointer swap); the buffer is left alone until the next call.
    std::function<void(float* weights)> use_weights;
    std::function<double()> compute;  // returns the loss; the gradient is in `gradients`
    const float* gradients = nullptr;
};

struct LearnerSummary {
    int64_t minibatches = 0;
    double compute_s = 0.0, wait_s = 0.0;
    double overlap_ratio() const { return compute_s + wait_s > 0 ? compute_s / (compute_s + wait_s) : 0.0; }
};

LearnerSummary run_learner(Transport& transport, const LearnerConfig& config, const LearnerWork& work);

// A learner that takes local SGD steps with a solver of its own (EASGD, gossip).
struct LocalSgdWork {
    size_t param_floats = 0;
    float* weights = nullptr;      // the local model, which `step` updates
    std::function<double()> step;  // one local SGD step on the next mini-batch; returns the loss
};

// The loss and timing reports of a learner that runs its own loop (all-reduce, EASGD, gossip) to
// the statistics server: every `every` mini-batches, and a last one marked done.
class StatsReporter {
public:
    StatsReporter(Transport& transport, int stats_rank, int every)
        : t_(transport), stats_rank_(stats_rank), every_(every > 0 ? every : 1) {}
    // After mini-batch number `minibatches` (from 1); the totals so far go with each report.
    void minibatch_done(double loss, int64_t minibatches, double compute_s, double wait_s, bool last = false);
    void finish(int64_t minibatches, double compute_s, double wait_s);  // the last report
    void count_sums(const SumGroup* sums) { sums_ = sums; }  // their bytes go with the traffic

private:
    void send(int64_t minibatches, double compute_s, double wait_s, bool done);
    Transport& t_;
    int stats_rank_, every_;
    const SumGroup* sums_ = nullptr;
    double loss_sum_ = 0.0;
    int64_t loss_count_ = 0;
};

}  // namespace rudra::dist
