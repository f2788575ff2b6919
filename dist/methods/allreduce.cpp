#include "dist/methods/allreduce.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "base/clock.h"
#include "dist/ps/learner.h"
#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"

namespace rudra::dist {

GradientBuckets::GradientBuckets(std::vector<std::vector<FloatRange>> final_after, size_t min_floats)
    : final_after_(std::move(final_after)), min_floats_(min_floats > 0 ? min_floats : 1) {}

void GradientBuckets::layer_done(size_t layer, const std::function<void(FloatRange)>& send) {
    for (const FloatRange& r : final_after_.at(layer)) {
        if (r.first >= r.second) continue;
        if (pending_.first == pending_.second) {
            pending_ = r;
        } else if (r.second == pending_.first) {
            pending_.first = r.first;  // the usual case: the layer below sits just below in the arena
        } else if (r.first == pending_.second) {
            pending_.second = r.second;
        } else {
            send(pending_);
            pending_ = r;
        }
        if (pending_.second - pending_.first >= min_floats_) flush(send);
    }
}

void GradientBuckets::flush(const std::function<void(FloatRange)>& send) {
    if (pending_.first < pending_.second) send(pending_);
    pending_ = {0, 0};
}

std::vector<std::vector<FloatRange>> final_gradients_by_layer(const nn::Net& net) {
    std::vector<std::vector<FloatRange>> out(net.num_layers());
    if (out.empty()) return out;
    std::vector<nn::ParamEntry> entries = net.params().entries();
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
    for (size_t k = 0; k < entries.size(); ++k) {
        const size_t end = k + 1 < entries.size() ? entries[k + 1].offset : net.params().size();
        const size_t begin = k == 0 ? 0 : entries[k].offset;
        size_t layer = 0;  // a parameter no layer names is final only at the end of the pass
        for (size_t i = 0; i < net.num_layers(); ++i)
            if (net.layer(i).name() == entries[k].layer) layer = i;
        out[layer].push_back({begin, end});
    }
    // From the top of the arena down, as the backward pass walks it: buckets then grow
    // contiguously from one layer into the one below.
    for (auto& ranges : out) std::sort(ranges.begin(), ranges.end(), [](auto a, auto b) { return a.first > b.first; });
    return out;
}

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// The members sum the three bytes
// of a hash of their weights and the squares of those bytes; the bytes agree everywhere exactly
// when m * sum(b^2) == (sum b)^2 (all exact in floats for fewer than 258 members).
bool models_agree(SumGroup& group, const float* weights, size_t n, const KeepWaiting& keep_waiting) {
    uint32_t h = 2166136261u;  // FNV-1a over the bytes
    const auto* bytes = reinterpret_cast<const unsigned char*>(weights);
    for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ bytes[i]) * 16777619u;
    float v[6];
    for (int k = 0; k < 3; ++k) {
        const float b = static_cast<float>((h >> (8 * k)) & 0xff);
        v[k] = b;
        v[3 + k] = b * b;
    }
    group.start(v, 6);
    if (!group.wait_all(keep_waiting)) throw PeerError(kAnySource, "allreduce: a learner stopped answering");
    const float m = static_cast<float>(group.members());
    for (int k = 0; k < 3; ++k)
        if (m * v[3 + k] != v[k] * v[k]) return false;
    return true;
}

namespace {

// One learner of an all-reduce run: its steps (the gradient sums start as the backward pass
// ends each layer), the epoch boundaries, the periodic checkpoints and the stop.
class AllreduceLearner {
public:
    AllreduceLearner(Transport& t, SumGroup& group, const AllreduceConfig& cfg, const AllreduceWork& work)
        : t_(t), group_(group), cfg_(cfg), work_(work), lambda_(group.members()), root_(group.index() == 0),
          per_step_(cfg.batch * lambda_), total_(cfg.samples_per_epoch * cfg.epochs),
          scale_(1.0f / static_cast<float>(lambda_)), buckets_(work.final_after, cfg.bucket_floats),
          started_(Clock::now()), watch_(cfg.silent_peer, "allreduce"), keep_waiting_(watch_.keep_waiting()),
          reports_(t, cfg.stats_rank, cfg.report_every), stats_(t, cfg.stats_rank, &group), samples_(cfg.start_samples),
          epoch_(samples_ / cfg.samples_per_epoch), checkpoints_(cfg.checkpoint_every) {
        reports_.count_sums(&group);
    }

    AllreduceSummary run() {
        try {
            if (root_ && cfg_.replay_epoch) send_epoch(true);
            checkpoints_.written(0, elapsed());
            float stop = 0.0f;  // summed over the learners with each step's gradients
            while (samples_ < total_ && stop == 0.0f) {
                stop = step();
                if (samples_ >= (epoch_ + 1) * cfg_.samples_per_epoch) {
                    epoch_boundary();
                } else if (root_ && cfg_.checkpoint && stop == 0.0f && samples_ < total_ &&
                           checkpoints_.due(sum_.steps, elapsed())) {
                    cfg_.checkpoint("periodic", sum_.steps, samples_, elapsed());
                    checkpoints_.written(sum_.steps, elapsed());
                }
            }
            sum_.samples = samples_;
            sum_.stopped = samples_ < total_;
            if (root_ && sum_.stopped) {
                if (cfg_.checkpoint) cfg_.checkpoint("signal", sum_.steps, samples_, elapsed());
                stats_.stopped(epoch_, sum_.steps, elapsed());
            }
            if (root_ && !stats_.await_done(keep_waiting_)) throw watch_.gone();
        } catch (const PeerError& e) {
            // A lost peer, named by a wait that gave up or by the transport (a send to a dead rank):
            // the first learner has the statistics server log it and the run's end.
            if (root_) stats_.lost_peer(watch_.lost(e), lambda_ - 1, epoch_, cfg_.start_steps + sum_.steps, elapsed());
            throw;
        }
        return sum_;
    }

private:
    double elapsed() const { return cfg_.elapsed_offset_s + seconds_since(started_); }

    // One step: the stop requests summed with the gradients, the averaged gradient applied
    // alike on every learner. Returns the sum of the stop requests.
    float step() {
        float stop = cfg_.stop_requested && cfg_.stop_requested() ? 1.0f : 0.0f;
        group_.start(&stop, 1);
        const auto send = [&](FloatRange r) { group_.start(work_.gradients + r.first, r.second - r.first); };
        const double loss = timed(cfg_.timeline, "compute (sums start as layers end)", sum_.compute_s, [&] {
            const double l = work_.compute([&](size_t layer) {
                buckets_.layer_done(layer, send);
                group_.progress();
            });
            buckets_.flush(send);
            return l;
        });
        const bool summed = timed(cfg_.timeline, "wait for sums", sum_.wait_s, [&] { return group_.wait_all(keep_waiting_); });
        if (!summed) throw watch_.gone();
        for (size_t i = 0; i < work_.param_floats; ++i) work_.gradients[i] *= scale_;
        work_.apply(sum_.steps);
        ++sum_.steps;
        samples_ += per_step_;
        reports_.minibatch_done(loss, sum_.steps, sum_.compute_s, sum_.wait_s, samples_ >= total_ || stop != 0.0f);
        return stop;
    }

    // Every learner checks that the models agree; the first sends the epoch's weights to the
    // statistics server and checkpoints.
    void epoch_boundary() {
        epoch_ = samples_ / cfg_.samples_per_epoch;
        bool agree = false;
        try {
            agree = models_agree(group_, work_.weights(), work_.param_floats, keep_waiting_);
        } catch (const PeerError&) {
            throw watch_.gone();
        }
        if (!agree)
            throw std::runtime_error("allreduce: the learners' models differ after epoch " + std::to_string(epoch_) +
                                     " (the sums were not the same on every learner)");
        if (!root_) return;
        send_epoch(false);
        if (cfg_.checkpoint && samples_ < total_) {
            cfg_.checkpoint("epoch", sum_.steps, samples_, elapsed());
            checkpoints_.written(sum_.steps, elapsed());
        }
    }

    void send_epoch(bool replay) {
        EpochWeightsHeader h{};
        h.epoch = epoch_;
        h.ts = cfg_.start_steps + sum_.steps;
        h.samples = samples_;
        h.elapsed_s = elapsed();
        h.final = samples_ >= total_ ? 1 : 0;
        h.replay = replay ? 1 : 0;
        stats_.send_epoch(h, work_.weights(), work_.param_floats);
    }

    Transport& t_;
    SumGroup& group_;
    const AllreduceConfig& cfg_;
    const AllreduceWork& work_;
    const int lambda_;
    const bool root_;
    const int64_t per_step_, total_;
    const float scale_;
    GradientBuckets buckets_;
    const Clock::time_point started_;
    PeerWatch watch_;
    const KeepWaiting keep_waiting_;
    StatsReporter reports_;
    StatsLink stats_;
    int64_t samples_, epoch_;
    CheckpointCadence checkpoints_;
    AllreduceSummary sum_;
};

}  // namespace

AllreduceSummary run_allreduce_learner(Transport& t, SumGroup& group, const AllreduceConfig& cfg,
                                       const AllreduceWork& work) {
    if (cfg.batch <= 0 || cfg.samples_per_epoch <= 0) throw std::logic_error("allreduce: batch and epoch size needed");
    return AllreduceLearner(t, group, cfg, work).run();
}

}  // namespace rudra::dist
