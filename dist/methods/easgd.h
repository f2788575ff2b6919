// Elastic averaging SGD (Zhang, Choromanska, LeCun), asynchronous, on the parameter server: each
// learner takes local SGD steps with its own solver; every tau steps it pulls the centre
// variable from the PS, sends the elastic difference d = beta * (local - centre) and moves its
// own model by -d; the PS adds d to the centre (UpdateRule with Protocol::easgd). Learners do
// not wait for each other; the PS's epochs count tau mini-batches per difference.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "dist/ps/learner.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

class Timeline;

struct EasgdConfig {
    int ps_rank = 0;
    int stats_rank = 1;
    int tau = 1;        // local steps between exchanges with the centre
    float beta = 0.5f;  // moving rate, in (0, 1]
    int report_every = 10;  // local steps between loss reports to the statistics server
    Wire wire = Wire::Fp32;  // --wire: the centre pulled and the differences pushed
    Timeline* timeline = nullptr;  // --timeline: compute and exchange spans
};

// Runs until the PS answers a pull with stop; returns the learner's times (wait: pulls and pushes).
LearnerSummary run_easgd_learner(Transport& transport, const EasgdConfig& config, const LocalSgdWork& work);

}  // namespace rudra::dist
