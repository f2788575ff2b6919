#include "dist/methods/allreduce.h"

#include <algorithm>
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

// One learner of an all-reduce run on the run loop: its step (the gradient sums start as the
// backward pass ends each layer, the stop requests summed with them), the models' agreement and
// the first learner's epoch weights at each epoch end; the first learner keeps the checkpoints.
class AllreduceLearner : public session::RunMethod {
public:
    AllreduceLearner(Transport& t, SumGroup& group, const AllreduceConfig& cfg, const AllreduceWork& work)
        : group_(group), cfg_(cfg), work_(work), lambda_(group.members()), root_(group.index() == 0),
          per_step_(cfg.batch * lambda_), total_(cfg.samples_per_epoch * cfg.epochs),
          scale_(1.0f / static_cast<float>(lambda_)), buckets_(work.final_after, cfg.bucket_floats),
          watch_(cfg.silent_peer, "allreduce"), keep_waiting_(watch_.keep_waiting()),
          reports_(t, cfg.stats_rank, cfg.report_every), stats_(t, cfg.stats_rank, &group) {
        reports_.count_sums(&group);
    }

    AllreduceSummary run() {
        session::RunPlan plan;
        plan.samples_per_epoch = cfg_.samples_per_epoch;
        plan.total_samples = total_;
        plan.start = {cfg_.start_steps, cfg_.start_samples, 0, 0.0};
        plan.elapsed_offset_s = cfg_.elapsed_offset_s;
        plan.checkpoint_every = cfg_.checkpoint_every;
        plan.checkpoint_at_epochs = true;
        plan.stop_requested = cfg_.stop_requested;
        try {
            const session::RunEnd end = session::run_loop(*this, plan);
            sum_.samples = end.at.samples;
            sum_.stopped = end.stopped;
        } catch (const PeerError& e) {
            // A lost peer, named by a wait that gave up or by the transport (a send to a dead rank):
            // the first learner has the statistics server log it and the run's end.
            if (root_) {
                const SilentPeer lost = watch_.lost(e);
                stats_.lost_peer(lost.rank, lost.silent_s, lambda_ - 1, last_.epoch, last_.steps,
                                 cfg_.elapsed_offset_s + seconds_since(started_));
            }
            throw;
        }
        return sum_;
    }

    bool stops_together() const override { return true; }
    bool keeps_checkpoints() const override { return root_ && static_cast<bool>(cfg_.checkpoint); }

    void begin(const session::RunPosition& at) override {
        last_ = at;
        if (root_ && cfg_.replay_epoch) send_epoch(at, true);
    }

    // The stop requests summed with the gradients, the averaged gradient applied alike on every
    // learner.
    session::StepDone step(const session::RunPosition& at, bool stop_asked) override {
        float stop = stop_asked ? 1.0f : 0.0f;
        group_.start(&stop, 1);
        const auto send = [&](FloatRange r) {
            group_.start(work_.gradients + r.first, r.second - r.first, cfg_.wire);
        };
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
        reports_.minibatch_done(loss, sum_.steps, sum_.compute_s, sum_.wait_s,
                                at.samples + per_step_ >= total_ || stop != 0.0f);
        return {per_step_, stop != 0.0f};
    }

    void after_step(const session::RunPosition& at, bool) override { last_ = at; }

    // Every learner checks that the models agree; the first sends the epoch's weights to the
    // statistics server.
    bool epoch_end(const session::RunPosition& at, bool) override {
        bool agree = false;
        try {
            agree = models_agree(group_, work_.weights(), work_.param_floats, keep_waiting_);
        } catch (const PeerError&) {
            throw watch_.gone();
        }
        if (!agree)
            throw std::runtime_error("allreduce: the learners' models differ after epoch " + std::to_string(at.epoch) +
                                     " (the sums were not the same on every learner)");
        if (root_) send_epoch(at, false);
        return false;
    }

    bool save(session::CheckpointWhy why, const session::RunPosition& at) override {
        cfg_.checkpoint(session::reason_name(why), sum_.steps, at.samples, at.elapsed_s);
        return true;
    }

    void end(const session::RunPosition& at, bool stopped) override {
        if (!root_) return;
        if (stopped) stats_.stopped(at.epoch, sum_.steps, at.elapsed_s);
        if (!stats_.await_done(keep_waiting_)) throw watch_.gone();
    }

private:
    void send_epoch(const session::RunPosition& at, bool replay) {
        EpochWeightsHeader h{};
        h.epoch = at.epoch;
        h.ts = at.steps;
        h.samples = at.samples;
        h.elapsed_s = at.elapsed_s;
        h.final = at.samples >= total_ ? 1 : 0;
        h.replay = replay ? 1 : 0;
        stats_.send_epoch(h, work_.weights(), work_.param_floats);
    }

    SumGroup& group_;
    const AllreduceConfig& cfg_;
    const AllreduceWork& work_;
    const int lambda_;
    const bool root_;
    const int64_t per_step_, total_;
    const float scale_;
    GradientBuckets buckets_;
    PeerWatch watch_;
    const KeepWaiting keep_waiting_;
    StatsReporter reports_;
    StatsLink stats_;
    const SteadyClock::time_point started_ = SteadyClock::now();
    session::RunPosition last_;  // where the run stood last, for the report of a lost peer
    AllreduceSummary sum_;
};

}  // namespace

AllreduceSummary run_allreduce_learner(Transport& t, SumGroup& group, const AllreduceConfig& cfg,
                                       const AllreduceWork& work) {
    if (cfg.batch <= 0 || cfg.samples_per_epoch <= 0) throw std::logic_error("allreduce: batch and epoch size needed");
    return AllreduceLearner(t, group, cfg, work).run();
}

}  // namespace rudra::dist
