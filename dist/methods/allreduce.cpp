#include "dist/methods/allreduce.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "base/clock.h"
#include "dist/ps/learner.h"
#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"
#include "dist/transport/traffic.h"

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

AllreduceSummary run_allreduce_learner(Transport& t, SumGroup& group, const AllreduceConfig& cfg,
                                       const AllreduceWork& work) {
    if (cfg.batch <= 0 || cfg.samples_per_epoch <= 0) throw std::logic_error("allreduce: batch and epoch size needed");
    const int lambda = group.members();
    const bool root = group.index() == 0;
    const int64_t per_step = cfg.batch * lambda;
    const int64_t total = cfg.samples_per_epoch * cfg.epochs;
    const float scale = 1.0f / static_cast<float>(lambda);
    GradientBuckets buckets(work.final_after, cfg.bucket_floats);
    const auto send = [&](FloatRange r) { group.start(work.gradients + r.first, r.second - r.first); };
    const auto started = Clock::now();
    const auto elapsed = [&] { return cfg.elapsed_offset_s + seconds_since(started); };
    PeerWatch watch(cfg.silent_peer, "allreduce");
    const KeepWaiting keep_waiting = watch.keep_waiting();
    AllreduceSummary sum;
    StatsReporter reports(t, cfg.stats_rank, cfg.report_every);
    reports.count_sums(&group);
    int64_t samples = cfg.start_samples, epoch = samples / cfg.samples_per_epoch, epochs_sent = 0;
    const auto gone = [&] { return watch.gone(); };
    std::vector<char> out;
    const auto send_epoch = [&](bool replay) {
        EpochWeightsHeader h{};
        h.epoch = epoch;
        h.ts = cfg.start_steps + sum.steps;
        h.samples = samples;
        h.elapsed_s = elapsed();
        h.final = samples >= total ? 1 : 0;
        h.replay = replay ? 1 : 0;
        h.traffic = traffic_report(t, &group);
        pack(out, h, work.weights(), work.param_floats);
        t.send(cfg.stats_rank, kEpochWeights, out.data(), out.size());
        ++epochs_sent;
    };
    try {
        if (root && cfg.replay_epoch) send_epoch(true);
        float stop = 0.0f;  // summed over the learners with each step's gradients
        CheckpointCadence checkpoints(cfg.checkpoint_every);
        checkpoints.written(0, elapsed());
        while (samples < total && stop == 0.0f) {
            const auto t0 = Clock::now();
            stop = cfg.stop_requested && cfg.stop_requested() ? 1.0f : 0.0f;
            group.start(&stop, 1);
            double loss;
            {
                const Span span(cfg.timeline, "compute (sums start as layers end)");
                loss = work.compute([&](size_t layer) {
                    buckets.layer_done(layer, send);
                    group.progress();
                });
                buckets.flush(send);
            }
            const auto t1 = Clock::now();
            {
                const Span span(cfg.timeline, "wait for sums");
                if (!group.wait_all(keep_waiting)) throw gone();
            }
            const auto t2 = Clock::now();
            for (size_t i = 0; i < work.param_floats; ++i) work.gradients[i] *= scale;
            work.apply(sum.steps);
            ++sum.steps;
            samples += per_step;
            sum.compute_s += seconds_between(t0, t1);
            sum.wait_s += seconds_between(t1, t2);
            const bool last = samples >= total || stop != 0.0f;
            reports.minibatch_done(loss, sum.steps, sum.compute_s, sum.wait_s, last);
            if (samples >= (epoch + 1) * cfg.samples_per_epoch) {
                epoch = samples / cfg.samples_per_epoch;
                bool agree = false;
                try {
                    agree = models_agree(group, work.weights(), work.param_floats, keep_waiting);
                } catch (const PeerError&) {
                    throw gone();
                }
                if (!agree)
                    throw std::runtime_error("allreduce: the learners' models differ after epoch " + std::to_string(epoch) +
                                             " (the sums were not the same on every learner)");
                if (!root) continue;
                send_epoch(false);
                if (cfg.checkpoint && samples < total) {
                    cfg.checkpoint("epoch", sum.steps, samples, elapsed());
                    checkpoints.written(sum.steps, elapsed());
                }
            } else if (root && cfg.checkpoint && stop == 0.0f && samples < total) {
                if (checkpoints.due(sum.steps, elapsed())) {
                    cfg.checkpoint("periodic", sum.steps, samples, elapsed());
                    checkpoints.written(sum.steps, elapsed());
                }
            }
        }
        sum.samples = samples;
        sum.stopped = samples < total;
        if (root && sum.stopped) {
            if (cfg.checkpoint) cfg.checkpoint("signal", sum.steps, samples, elapsed());
            const RunEnd end{kEndSignal, epoch, sum.steps, elapsed()};
            t.send(cfg.stats_rank, kRunEnd, &end, sizeof end);
        }
        if (root && !await_stats_server(t, cfg.stats_rank, epochs_sent, keep_waiting)) throw gone();
    } catch (const PeerError& e) {
        // A lost peer, named by a wait that gave up or by the transport (a send to a dead rank):
        // the first learner has the statistics server log it and the run's end.
        if (root) report_lost_peer(t, cfg.stats_rank, watch.lost(e), lambda - 1, epoch, cfg.start_steps + sum.steps, elapsed());
        throw;
    }
    return sum;
}

void report_lost_peer(Transport& t, int stats_rank, const SilentPeer& lost, int live_learners, int64_t epoch,
                      int64_t steps, double elapsed_s) {
    if (lost.rank == stats_rank || lost.rank < 0) return;
    std::vector<char> out;
    pack(out, LearnerLost{lost.rank, elapsed_s, lost.silent_s, live_learners, 1});
    t.send(stats_rank, kLearnerLost, out.data(), out.size());
    pack(out, RunEnd{kEndLearnerLost, epoch, steps, elapsed_s});
    t.send(stats_rank, kRunEnd, out.data(), out.size());
}

// Received by tag: a receive of any tag could take a heartbeat from the heartbeat thread.
bool await_stats_server(Transport& t, int stats_rank, int64_t epochs_sent, const KeepWaiting& keep_waiting) {
    std::vector<char> in;
    for (int64_t e = 0; e <= epochs_sent; ++e)
        if (!t.recv_while(stats_rank, e < epochs_sent ? kEpochLogged : kStatsDone, in, keep_waiting)) return false;
    return true;
}

}  // namespace rudra::dist
