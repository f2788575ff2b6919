// Update rules on the flat parameter arena (Caffe's sgd_solver): L2 weight decay with
// per-parameter multipliers, then SGD with momentum, Nesterov or AdaGrad. The gradient buffer
// is an argument so that a parameter server can apply gradients that arrived over the wire.
#pragma once
#include <cstdint>

#include "kernels/aligned_buffer.h"
#include "nn/param_store.h"
#include "nn/solver_spec.h"

namespace rudra::nn {

class Solver {
public:
    Solver(const SolverSpec& spec, ParamStore& params);

    // rate = policy(iter) * lr_scale; grads has the layout of params.grads().
    // momentum: the solver's own when negative; a parameter server may lower it for stale
    // gradients (dist/ps/update_rule.h).
    void apply(const float* grads, int64_t iter, float lr_scale = 1.0f, float momentum = -1.0f);
    double rate(int64_t iter) const { return spec_.lr.rate(iter); }

    // Momentum (SGD, Nesterov) or squared-gradient sum (AdaGrad), same layout as the params.
    float* history() { return history_.data(); }
    const float* history() const { return history_.data(); }
    size_t history_size() const { return history_.size(); }
    const SolverSpec& spec() const { return spec_; }

private:
    const SolverSpec spec_;
    ParamStore& params_;
    kernels::AlignedBuffer history_;
};

}  // namespace rudra::nn
