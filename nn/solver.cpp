#include "nn/solver.h"

#include <cmath>

#include "nn/arena_loop.h"

namespace rudra::nn {

Solver::Solver(const SolverSpec& spec, ParamStore& params)
    : spec_(spec), params_(params), history_(params.size()) {}

void Solver::apply(const float* grads, int64_t iter, float lr_scale, float momentum_override) {
    const float rate = static_cast<float>(spec_.lr.rate(iter)) * lr_scale;
    const float momentum = momentum_override >= 0.0f ? momentum_override : static_cast<float>(spec_.momentum);
    const float delta = static_cast<float>(spec_.delta);
    float* w_all = params_.values();
    float* h_all = history_.data();
    for (const ParamEntry& e : params_.entries()) {
        const long n = static_cast<long>(e.shape.count());
        float* w = w_all + e.offset;
        float* h = h_all + e.offset;
        const float* g = grads + e.offset;
        const float lr = rate * e.lr_mult;
        const float decay = static_cast<float>(spec_.weight_decay) * e.decay_mult;
        switch (spec_.type) {
            case SolverType::SGD:
                arena_loop(n, [&](long i) {
                    h[i] = momentum * h[i] + lr * (g[i] + decay * w[i]);
                    w[i] -= h[i];
                });
                break;
            case SolverType::Nesterov:
                arena_loop(n, [&](long i) {
                    const float prev = h[i];
                    h[i] = momentum * h[i] + lr * (g[i] + decay * w[i]);
                    w[i] -= (1.0f + momentum) * h[i] - momentum * prev;
                });
                break;
            case SolverType::AdaGrad:
                arena_loop(n, [&](long i) {
                    const float gi = g[i] + decay * w[i];
                    h[i] += gi * gi;
                    w[i] -= lr * gi / (std::sqrt(h[i]) + delta);
                });
                break;
        }
    }
}

}  // namespace rudra::nn
