#include "dist/stats_server.h"

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "dist/messages.h"
#include "kernels/aligned_buffer.h"

namespace rudra::dist {

void run_stats_server(Transport& t, const StatsConfig& cfg, const std::function<TestResult(const float*)>& test,
                      const std::function<void(const std::string&)>& log) {
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
        char line[768];
        std::snprintf(line, sizeof line,
                      "{\"event\":\"epoch\",\"protocol\":\"%s\",\"epoch\":%lld,\"train_loss\":%.6g,\"test_accuracy\":%.6g,"
                      "\"test_loss\":%.6g,\"elapsed_s\":%.3f,\"updates\":%lld,\"samples\":%lld,\"staleness_mean\":%.4g,"
                      "\"staleness_max\":%lld,\"images_per_s\":%.1f,\"overlap_ratio\":%.4f}",
                      cfg.protocol.c_str(), static_cast<long long>(h.epoch),
                      loss_count ? loss_sum / loss_count : 0.0, r.accuracy, r.loss, h.elapsed_s,
                      static_cast<long long>(h.ts), static_cast<long long>(h.samples), h.staleness_mean,
                      static_cast<long long>(h.staleness_max), span > 0 ? (h.samples - prev_samples) / span : 0.0,
                      compute + wait > 0 ? compute / (compute + wait) : 0.0);
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
