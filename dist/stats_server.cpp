#include "dist/stats_server.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "dist/messages.h"
#include "kernels/aligned_buffer.h"

namespace rudra::dist {
namespace {

// x to `digits` significant digits, so that the metrics read like the figures they are.
double significant(double x, int digits) {
    if (x == 0.0 || !std::isfinite(x)) return x;
    const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
    return std::round(x * scale) / scale;
}

}  // namespace

void run_stats_server(Transport& t, const StatsConfig& cfg, const std::function<TestResult(const float*)>& test,
                      const std::function<void(const nlohmann::ordered_json&)>& log) {
    std::vector<char> in;
    kernels::AlignedBuffer weights(cfg.param_floats);
    std::vector<double> compute_s(t.size(), 0.0), wait_s(t.size(), 0.0);  // by rank
    double loss_sum = 0.0;
    int64_t loss_count = 0, prev_samples = cfg.start_samples;
    double prev_elapsed = 0.0;
    int done = 0;
    bool final_seen = false;
    while (!(final_seen && done == cfg.learners)) {
        Envelope e = t.recv(kAnySource, kAnyTag, in);
        if (e.tag == kLearnerReport) {
            const auto r = unpack_header<LearnerReport>(in);
            loss_sum += r.loss_sum;
            loss_count += r.loss_count;
            compute_s.at(static_cast<size_t>(e.source)) = r.compute_s;  // totals: keep the latest
            wait_s.at(static_cast<size_t>(e.source)) = r.wait_s;
            done += r.done ? 1 : 0;
            continue;
        }
        if (e.tag != kEpochWeights)
            throw std::runtime_error("statistics server: unexpected message tag " + std::to_string(e.tag));
        const auto h = unpack_header<EpochWeightsHeader>(in);
        unpack_floats<EpochWeightsHeader>(in, weights.data(), cfg.param_floats);
        const TestResult r = test(weights.data());
        double compute = 0.0, wait = 0.0;
        for (size_t i = 0; i < compute_s.size(); ++i) {
            compute += compute_s[i];
            wait += wait_s[i];
        }
        const double span = h.elapsed_s - prev_elapsed;
        nlohmann::ordered_json line{
            {"event", "epoch"},
            {"protocol", cfg.protocol},
            {"epoch", h.epoch},
            {"train_loss", significant(loss_count ? loss_sum / loss_count : 0.0, 6)},
            {"test_accuracy", significant(r.accuracy, 6)},
            {"test_loss", significant(r.loss, 6)},
            {"elapsed_s", std::round(h.elapsed_s * 1000) / 1000},
            {"updates", h.ts},
            {"samples", h.samples},
            {"staleness_mean", significant(h.staleness_mean, 4)},
            {"staleness_max", h.staleness_max},
            {"images_per_s", std::round((span > 0 ? (h.samples - prev_samples) / span : 0.0) * 10) / 10},
            {"overlap_ratio", std::round((compute + wait > 0 ? compute / (compute + wait) : 0.0) * 1e4) / 1e4}};
        log(line);
        if (cfg.on_epoch) cfg.on_epoch(line);
        loss_sum = 0.0;
        loss_count = 0;
        prev_samples = h.samples;
        prev_elapsed = h.elapsed_s;
        final_seen = final_seen || h.final;
    }
}

}  // namespace rudra::dist
