#include "dist/run/replay_epoch_lines.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/clock.h"
#include "dist/run/methods.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

EpochLines::EpochLines(const DistOptions& o, const Setup& s, const data::TrainTest& sets,
                       const dist::Protocol& protocol, const std::string& record, bool simulated,
                       const nlohmann::json* resumed)
    : test_(s.spec, sets, {.train_net = false, .test_net = true, .solver = false}),
      log_((fs::path(o.output) / "metrics.jsonl").string(), resumed != nullptr),
      protocol_(protocol.name()),
      epoch_samples_(static_cast<int64_t>(sets.train.size())),
      epochs_(o.epochs),
      started_(std::chrono::steady_clock::now()),
      next_(s.start_samples / std::max<int64_t>(1, epoch_samples_) + 1) {
    if (resumed) {
        const nlohmann::json& j = *resumed;
        j.at("next").get_to(next_);
        j.at("loss_sum").get_to(loss_sum_);
        j.at("losses").get_to(losses_);
        j.at("last_elapsed").get_to(last_elapsed_);
        j.at("last_samples").get_to(last_samples_);
        j.at("last_time").get_to(last_time_s_);
        j.at("elapsed").get_to(offset_s_);
    }
    nlohmann::ordered_json start = start_line(resumed ? "resume" : "start", o, s, sets, protocol.learners());
    // What a run's statistics server adds (dist/run/stats_role.cpp), so that a sweep's collection
    // reads a replay's or virtual cluster's method and tree as a run's.
    if (const Method& m = method_of(protocol.kind()); m.record) m.record(o, protocol.learners(), start);
    if (o.topology != "base") start["layout"] = {{"topology", o.topology}};
    start[simulated ? "virtual_cluster" : "replay_of"] = record;
    log_.write(start);
}

nlohmann::ordered_json EpochLines::state() const {
    return {{"next", next_},
            {"loss_sum", loss_sum_},
            {"losses", losses_},
            {"last_elapsed", last_elapsed_},
            {"last_samples", last_samples_},
            {"last_time", last_time_s_},
            {"elapsed", elapsed()}};
}

void EpochLines::after_update(UpdateRule& rule, const nn::ParamStore& weights, double time_s) {
    if (time_s >= 0) last_time_s_ = time_s;
    while (next_ <= epochs_ && rule.samples() >= next_ * epoch_samples_) {
        std::memcpy(test_.params().values(), weights.values(), sizeof(float) * weights.size());
        const session::EvalResult r = test_.evaluate();
        double mean = 0;
        int64_t max = 0, dropped = 0;
        rule.staleness().take_epoch(mean, max, dropped);
        const double elapsed = last_time_s_ >= 0 ? last_time_s_ : this->elapsed();
        nlohmann::ordered_json line{{"event", "epoch"},
                                    {"protocol", protocol_},
                                    {"epoch", next_},
                                    {"train_loss", losses_ ? loss_sum_ / static_cast<double>(losses_) : 0.0},
                                    {"test_accuracy", r.accuracy},
                                    {"test_loss", r.loss},
                                    {"elapsed_s", elapsed},
                                    {"updates", rule.timestamp()},
                                    {"samples", rule.samples()},
                                    {"staleness_mean", mean},
                                    {"staleness_max", max}};
        if (rule.drops_gradients()) line["dropped"] = dropped;
        if (elapsed > last_elapsed_)
            line["images_per_s"] = static_cast<double>(rule.samples() - last_samples_) / (elapsed - last_elapsed_);
        if (r.top5 >= 0) line["test_top5"] = r.top5;
        log_.write(line);
        std::printf("epoch %lld/%d: test accuracy %.4f (loss %.4f), train loss %.4f, staleness %.2f (max %lld), "
                    "%.1f s%s\n",
                    static_cast<long long>(next_), epochs_, r.accuracy, r.loss,
                    losses_ ? loss_sum_ / static_cast<double>(losses_) : 0.0, mean, static_cast<long long>(max),
                    elapsed, last_time_s_ >= 0 ? " simulated" : "");
        std::fflush(stdout);
        loss_sum_ = 0;
        losses_ = 0;
        last_elapsed_ = elapsed;
        last_samples_ = rule.samples();
        ++next_;
    }
}

double EpochLines::elapsed() const { return offset_s_ + seconds_since(started_); }

}  // namespace rudra::dist::run
