// Gossip SGD, with no parameter server (the notes' "How to scale distributed deep learning?"):
// each learner takes local SGD steps with its own solver; every tau steps it exchanges models
// with one peer chosen at random (seeded per learner, and recorded). Pull: it asks the peer for
// its model and averages with it. Push: it sends its model to the peer, and averages its own
// with every model it received since its previous round.
//
// Consistency: a peer's model is read while its owner trains. Each learner publishes a copy of
// its model after every local step (double buffering: the step writes the model, the copy is
// replaced whole under a lock), and a serving thread answers peers from that copy; so a peer
// always gets the whole model of one step, never a half-updated one.
//
// At every epoch boundary (each learner's share of the epoch's samples) the learners meet in a
// collective: the average of their models and the spread (the largest distance of a model from
// the average) go to the statistics server with the average, and push's message counts are
// exchanged so that no model is left unreceived at the end. A stop (a signal) ends the epoch early
// on each learner that was asked (at once, after its current step; the others at the boundary), and
// the learners meet as at a boundary: their average is a checkpoint with each learner's steps, and
// a resumed run starts every learner from it, each where it stopped in its epoch.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/methods/allreduce.h"
#include "dist/ps/learner.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

enum class GossipMode { Pull, Push };

// stop_requested, asked before each local step: true ends this learner's epoch there; then the
// learners meet, and all stop when any of them was asked. start_steps: each learner's local steps
// at the start of epoch first_epoch + 1.
struct GossipConfig : DecentralizedConfig {
    GossipMode mode = GossipMode::Pull;
    int tau = 1;                     // local steps between exchanges
    uint64_t seed = 1;               // peer choices: each learner draws from seed and its index
    std::vector<int> learner_ranks;  // the rank of each member of the sum group, by index
    int64_t first_epoch = 0;         // epochs done before this run (a warm start's or a checkpoint's)
    int64_t start_partial = 0;       // this learner's steps already taken into that epoch (resumed)
    // The first learner, at each epoch boundary before the last ("epoch") and when stopping
    // ("signal"): the learners' average is a checkpoint. `steps`: each learner's at the last
    // boundary; `taken`: each learner's total (more than `steps` when stopped within an epoch);
    // `samples`: all the learners', from the run's start.
    std::function<void(const std::string& reason, const float* average, int64_t steps,
                       const std::vector<int64_t>& taken, int64_t samples, double elapsed_s)>
        checkpoint;
};

struct GossipSummary {
    int64_t steps = 0;             // this run's local steps
    int64_t epoch = 0;             // the last epoch completed (first_epoch included)
    bool stopped = false;          // by stop_requested, before the end of the last epoch
    double compute_s = 0.0, wait_s = 0.0;
    std::vector<int> peers;        // the peer (rank) of each of this run's exchanges, in order
    std::vector<double> spreads;   // the spread at each epoch boundary
    std::vector<float> average;    // the learners' average model at the last epoch boundary
};

GossipSummary run_gossip_learner(Transport& transport, SumGroup& group, const GossipConfig& config,
                                 const LocalSgdWork& work);

}  // namespace rudra::dist
