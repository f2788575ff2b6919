#include "dist/methods/easgd.h"

#include <chrono>
#include <stdexcept>
#include <vector>

#include "base/clock.h"
#include "dist/ps/ps_client.h"
#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"

namespace rudra::dist {

LearnerSummary run_easgd_learner(Transport& t, const EasgdConfig& cfg, const LocalSgdWork& work) {
    if (cfg.tau < 1 || !(cfg.beta > 0.0f && cfg.beta <= 1.0f))
        throw std::logic_error("easgd: tau must be >= 1 and beta in (0, 1]");
    using Clock = std::chrono::steady_clock;
    const size_t n = work.param_floats;
    PsClient ps(t, cfg.ps_rank, n, cfg.wire);
    std::vector<float> centre(n), diff(n);
    GradientMessage msg(cfg.wire);
    LearnerSummary sum;
    StatsReporter reports(t, cfg.stats_rank, cfg.report_every);
    // Every learner starts from the centre.
    auto t0 = Clock::now();
    PsClient::Pulled pulled = ps.pull(-1, 0, centre.data());
    sum.wait_s += seconds_since(t0);
    if (!pulled.stop) std::copy(centre.begin(), centre.end(), work.weights);
    while (!pulled.stop) {
        double loss_sum = 0.0;
        for (int k = 0; k < cfg.tau; ++k) {
            const double loss = timed(cfg.timeline, "compute", sum.compute_s, work.step);
            loss_sum += loss;
            reports.minibatch_done(loss, ++sum.minibatches, sum.compute_s, sum.wait_s);
        }
        t0 = Clock::now();
        const Span span(cfg.timeline, "exchange with the centre");
        pulled = ps.pull(-1, 0, centre.data());
        if (!pulled.stop) {
            // The elastic force: both ends move by the same difference, towards each other.
            float* w = work.weights;
            for (size_t i = 0; i < n; ++i) {
                diff[i] = cfg.beta * (w[i] - centre[i]);
                w[i] -= diff[i];
            }
            msg.pack(pulled.ts, loss_sum / cfg.tau, diff.data(), n);
            ps.push(msg);
        }
        sum.wait_s += seconds_since(t0);
    }
    // The last report before the goodbye: once the PS has the goodbye, the statistics server
    // has all this learner will send.
    reports.finish(sum.minibatches, sum.compute_s, sum.wait_s);
    ps.bye();
    return sum;
}

}  // namespace rudra::dist
