// What the tests of the distributed runtime share: a parameter arena of one vector, a plain SGD
// solver, heartbeats paced for the in-process hub, and learner work on a toy quadratic.
#pragma once
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "dist/ps/learner.h"
#include "dist/transport/heartbeat.h"
#include "nn/param_store.h"
#include "nn/solver.h"

namespace rudra::dist_toys {

inline nn::ParamStore vector_store(int n) {
    nn::ParamEntry e;
    e.layer = "w";
    e.shape = nn::Shape{n};
    return nn::ParamStore({e});
}

inline nn::SolverSpec plain_sgd(double lr, double momentum = 0.0) {
    nn::SolverSpec s;
    s.lr.base_lr = lr;
    s.momentum = momentum;
    return s;
}

// Heartbeats often enough for `timeout_s`, and no more often than the program's (1 s): every
// message wakes every waiting thread of the in-process hub, and on 2 cores frequent ones starve
// some learners (a staleness no MPI run would see).
inline dist::HeartbeatConfig beats(std::vector<int> notify, double timeout_s = 15.0) {
    dist::HeartbeatConfig c;
    c.notify = std::move(notify);
    c.interval_s = std::min(1.0, timeout_s / 5);
    return c;
}

// Learner work for the toy objective 0.5 * |w - target|^2 (target 3 unless set): the gradient is
// w - target. A gradient takes
// `compute_time`, as a real one does: the in-process hub buffers every send, so learners that
// produce gradients as fast as a loop can would flood the PS's queue, and the staleness (and so
// the convergence of async SGD) would depend on thread scheduling.
struct Quadratic {
    std::vector<float> w, g;
    std::chrono::microseconds compute_time;
    float target = 3.0f;
    explicit Quadratic(size_t n, std::chrono::microseconds t = std::chrono::microseconds(300))
        : w(n), g(n), compute_time(t) {}
    dist::LearnerWork work() {
        dist::LearnerWork lw;
        lw.param_floats = w.size();
        lw.load_weights = [this](const float* p) { std::copy(p, p + w.size(), w.begin()); };
        lw.compute = [this] {
            std::this_thread::sleep_for(compute_time);
            double loss = 0;
            for (size_t i = 0; i < w.size(); ++i) {
                g[i] = w[i] - target;
                loss += 0.5 * g[i] * g[i];
            }
            return loss;
        };
        lw.gradients = g.data();
        return lw;
    }
};

}  // namespace rudra::dist_toys
