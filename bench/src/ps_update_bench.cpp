// The parameter server's update on one core and on the OpenMP team: lambda-softsync's (one
// gradient per update, then the solver's momentum SGD step) and hardsync's (lambda gradients
// summed and averaged, then the step), on an arena of N floats (default 61M: the AlexNet deploy net's size),
// timed alternately per thread count in one run. Prints ms per update and GB/s of arena traffic.
// Usage: ps_update_bench [FLOATS=61000000] [LAMBDA=4] [REPEATS=5]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dist/ps/protocol.h"
#include "dist/ps/update_rule.h"
#include "nn/solver.h"

using namespace rudra;

namespace {

double ms_per_update(const dist::Protocol& protocol, int lambda, long floats, int updates) {
    nn::ParamEntry e;
    e.layer = "w";
    e.shape = nn::Shape{static_cast<int>(floats)};
    nn::ParamStore params({e});
    nn::SolverSpec spec;
    spec.lr.base_lr = 1e-6;
    spec.momentum = 0.9;
    nn::Solver solver(spec, params);
    dist::UpdateRule rule(protocol, solver, params, lambda, {});
    const std::vector<float> gradient(params.size(), 1.0f);
    const int per_update = protocol.gradients_per_update();
    for (int l = 0; l < per_update; ++l) rule.add_gradient(l, rule.timestamp(), gradient.data());  // warm pages
    const auto t0 = std::chrono::steady_clock::now();
    for (int u = 0; u < updates; ++u)
        for (int l = 0; l < per_update; ++l) rule.add_gradient(l, rule.timestamp(), gradient.data());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / updates;
}

}  // namespace

int main(int argc, char** argv) {
    const long floats = argc > 1 ? std::atol(argv[1]) : 61000000L;
    const int lambda = argc > 2 ? std::atoi(argv[2]) : 4;
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
    const int max_threads = omp_get_max_threads();
    std::printf("PS update of %ld floats (%.0f MB), lambda %d, best of %d rounds alternating 1..%d threads\n", floats,
                floats * 4 / 1e6, lambda, repeats, max_threads);
    for (const dist::Protocol& p : {dist::Protocol::softsync(lambda, lambda), dist::Protocol::hardsync(lambda)}) {
        std::vector<double> best(static_cast<size_t>(max_threads) + 1, 1e30);
        for (int r = 0; r < repeats; ++r)
            for (int threads = 1; threads <= max_threads; ++threads) {
                omp_set_num_threads(threads);
                best[static_cast<size_t>(threads)] =
                    std::min(best[static_cast<size_t>(threads)], ms_per_update(p, lambda, floats, 3));
            }
        for (int threads = 1; threads <= max_threads; ++threads) {
            // Arena traffic per update: the first gradient read and the sum written, each later
            // one read with the sum read and written, the sum scaled (read and written), then the
            // sum, weights and history read and the weights and history written.
            const double bytes = 4.0 * floats * (3.0 * p.gradients_per_update() + 6.0);
            std::printf("%-12s threads %2d: %8.1f ms per update, %6.1f GB/s, speed-up %.2f\n", p.name().c_str(),
                        threads, best[static_cast<size_t>(threads)], bytes / best[static_cast<size_t>(threads)] / 1e6,
                        best[1] / best[static_cast<size_t>(threads)]);
        }
    }
}
