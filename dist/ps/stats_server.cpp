#include "dist/ps/stats_server.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"
#include "dist/transport/traffic.h"
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
    std::vector<int64_t> minibatches(t.size(), 0);                       // by rank: the latest total
    std::vector<char> finished(t.size(), 0);  // by rank: its last report came, or it was lost
    std::vector<TrafficReport> traffic(t.size(), TrafficReport{});  // by rank: the latest it sent
    std::vector<RankStarted> started(t.size(), RankStarted{-1.0, -1.0, -1, -1});  // by rank, once it says
    double loss_sum = 0.0;
    int64_t loss_count = 0, prev_samples = cfg.start_samples;
    double prev_elapsed = cfg.start_elapsed_s;
    int done = 0;
    bool final_seen = false;
    auto tell_ps = [&](int tag, int64_t value) { t.send(cfg.ps_rank, tag, &value, sizeof value); };
    auto finish = [&](int rank) {
        if (!finished.at(static_cast<size_t>(rank))) ++done;
        finished[static_cast<size_t>(rank)] = 1;
    };
    while (!(final_seen && done >= cfg.learners)) {
        // A learner that stops in the middle of a report is skipped (the PS will say it is lost).
        std::optional<Envelope> got;
        try {
            got = t.recv_while(kAnySource, kAnyTag, in, {}, [&](int rank) {
                return !cfg.heartbeat || rank == cfg.ps_rank || cfg.heartbeat->heard_within(rank, cfg.peer_timeout_s);
            });
        } catch (const PeerError&) {
            continue;
        }
        const Envelope e = *got;
        if (e.tag == kHeartbeat) {
            if (cfg.heartbeat) cfg.heartbeat->beat_received(e.source);
            continue;
        }
        if (cfg.heartbeat) cfg.heartbeat->heard(e.source);
        if (e.tag == kRankStarted) {
            started.at(static_cast<size_t>(e.source)) = unpack_header<RankStarted>(in);
            continue;
        }
        if (e.tag == kLearnerReport) {
            const auto r = unpack_header<LearnerReport>(in);
            loss_sum += r.loss_sum;
            loss_count += r.loss_count;
            compute_s.at(static_cast<size_t>(e.source)) = r.compute_s;  // totals: keep the latest
            wait_s.at(static_cast<size_t>(e.source)) = r.wait_s;
            traffic.at(static_cast<size_t>(e.source)) = r.traffic;
            if (r.done) finish(e.source);
            if (cfg.on_report) {
                minibatches.at(static_cast<size_t>(e.source)) = r.minibatches;
                int64_t all = 0;
                for (int64_t m : minibatches) all += m;
                cfg.on_report(all, loss_count ? loss_sum / loss_count : 0.0);
            }
            continue;
        }
        if (e.tag == kLearnerLost) {
            const auto l = unpack_header<LearnerLost>(in);
            nlohmann::ordered_json line{{"event", "learner_lost"},
                                        {"rank", l.rank},
                                        {"elapsed_s", std::round(l.elapsed_s * 1000) / 1000},
                                        {"silent_s", std::round(l.silent_s * 10) / 10},
                                        {"live_learners", l.live},
                                        {"stops_run", l.stops_run != 0}};
            log(line);
            if (cfg.on_epoch) cfg.on_epoch(line);
            finish(static_cast<int>(l.rank));
            continue;
        }
        if (e.tag == kRunEnd) {
            const auto r = unpack_header<RunEnd>(in);
            nlohmann::ordered_json line{{"event", "stopped"},
                                        {"reason", r.reason == kEndSignal ? "signal" : "learner lost"},
                                        {"epochs_done", r.epoch},
                                        {"updates", r.ts},
                                        {"elapsed_s", std::round(r.elapsed_s * 1000) / 1000}};
            log(line);
            if (cfg.on_epoch) cfg.on_epoch(line);
            final_seen = true;  // no more epochs: only the learners' last reports to take
            continue;
        }
        if (e.tag != kEpochWeights)
            throw std::runtime_error("statistics server: unexpected message tag " + std::to_string(e.tag));
        const auto h = unpack_header<EpochWeightsHeader>(in);
        traffic.at(static_cast<size_t>(e.source)) = h.traffic;
        if (h.replay && h.epoch <= cfg.last_logged_epoch) {  // already in the metrics
            tell_ps(kEpochLogged, h.epoch);
            continue;
        }
        unpack_floats<EpochWeightsHeader>(in, weights.data(), cfg.param_floats);
        TestResult r;
        {
            const Span span(cfg.timeline, "test the epoch's weights");
            r = test(weights.data());
        }
        double compute = 0.0, wait = 0.0;
        for (size_t i = 0; i < compute_s.size(); ++i) {
            compute += compute_s[i];
            wait += wait_s[i];
        }
        const double span = h.elapsed_s - prev_elapsed;
        nlohmann::ordered_json line{
            {"event", "epoch"},
            {"replayed", h.replay != 0},
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
        if (!h.replay) line.erase("replayed");
        // No learner has reported a loss this epoch (they report every few mini-batches): none is
        // written, rather than a loss of 0.
        if (loss_count == 0) line.erase("train_loss");
        if (r.top5 >= 0) line["test_top5"] = significant(r.top5, 6);
        if (!r.layers.empty()) {
            nlohmann::ordered_json layers = nlohmann::ordered_json::object();
            for (const auto& [name, value] : r.layers) layers[name] = significant(value, 6);
            line["accuracy_layers"] = layers;
        }
        if (h.has_spread) line["spread"] = significant(h.spread, 4);
        if (h.drops) line["dropped"] = h.dropped;
        line["rank0_traffic"] = traffic_json(h.traffic);
        log(line);
        tell_ps(kEpochLogged, h.epoch);
        if (cfg.on_epoch) cfg.on_epoch(line);
        loss_sum = 0.0;
        loss_count = 0;
        prev_samples = h.samples;
        prev_elapsed = h.elapsed_s;
        final_seen = final_seen || h.final;
    }
    // Every rank's traffic, as of the last message it sent here (this rank's: now).
    traffic.at(static_cast<size_t>(t.rank())) = traffic_report(t);
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (int r = 0; r < t.size(); ++r) {
        const std::string role = static_cast<size_t>(r) < cfg.roles.size() ? cfg.roles[static_cast<size_t>(r)]
                                 : r == t.rank()                            ? "statistics server"
                                 : r == cfg.ps_rank && cfg.has_ps           ? "parameter server"
                                                                            : "learner";
        nlohmann::ordered_json one{{"rank", r}, {"role", role}};
        const RankStarted& s = started[static_cast<size_t>(r)];
        if (s.startup_s >= 0) {
            one["ready_s"] = std::round(s.ready_s * 100) / 100;
            one["startup_s"] = std::round(s.startup_s * 100) / 100;
            one["resident_mb"] = std::round(static_cast<double>(s.resident_kb) / 102.4) / 10;
            one["private_mb"] = std::round(static_cast<double>(s.private_kb) / 102.4) / 10;
        }
        one.update(traffic_json(traffic[static_cast<size_t>(r)]));
        ranks.push_back(one);
    }
    log(nlohmann::ordered_json{{"event", "traffic"}, {"ranks", ranks}});
    t.send(cfg.ps_rank, kStatsDone, nullptr, 0);
}

}  // namespace rudra::dist
