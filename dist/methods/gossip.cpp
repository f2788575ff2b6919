#include "dist/methods/gossip.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/clock.h"
#include "dist/ps/learner.h"
#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"
#include "dist/transport/traffic.h"

namespace rudra::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The model as peers see it, and (push) the models received from them. The serving thread
// answers pulls and takes pushes while the learner computes.
class ModelExchange {
public:
    // `peer_alive(rank)`: false once `rank` is known to be lost (empty: never known).
    ModelExchange(Transport& t, GossipMode mode, size_t n, std::function<bool(int)> peer_alive)
        : t_(t), mode_(mode), peer_alive_(std::move(peer_alive)), published_(n), inbox_(n, 0.0f) {}
    ~ModelExchange() { stop(); }

    void publish(const float* w) {
        std::lock_guard<std::mutex> lock(mu_);
        std::copy(w, w + published_.size(), published_.begin());
    }
    // Push: adds the models received since the last call to `w` and averages; returns how many.
    int average_inbox(float* w) {
        std::lock_guard<std::mutex> lock(mu_);
        if (inbox_count_ == 0) return 0;
        const float inv = 1.0f / static_cast<float>(inbox_count_ + 1);
        for (size_t i = 0; i < inbox_.size(); ++i) {
            w[i] = (w[i] + inbox_[i]) * inv;
            inbox_[i] = 0.0f;
        }
        const int taken = inbox_count_;
        inbox_count_ = 0;
        return taken;
    }
    void start() {
        thread_ = std::thread([this] { serve(); });
    }
    // The serving thread's first bad message, as the loss of its sender; empty while there is none.
    std::optional<PeerError> failure() {
        std::lock_guard<std::mutex> lock(mu_);
        return failure_;
    }
    // Ends the serving thread once `expected` pushed models have arrived (pull: 0).
    void stop(int64_t expected = 0) {
        if (!thread_.joinable()) return;
        expected_ = expected;
        stopping_ = true;
        thread_.join();
    }

private:
    void serve() {
        const int tag = mode_ == GossipMode::Pull ? kGossipRequest : kGossipModel;
        std::vector<char> in, out;
        // A model from a peer that dies while sending it never finishes arriving. It is given up
        // once the thread needs no more models (the run is over or failed) or the peer is known
        // lost; waiting for it kept the learner, on its way out after the loss, from ever ending.
        const auto sender_alive = [this](int rank) {
            return !(stopping_ && received_ >= expected_) && (!peer_alive_ || peer_alive_(rank));
        };
        while (!(stopping_ && received_ >= expected_)) {
            std::optional<Envelope> e;
            try {
                e = t_.recv_while(kAnySource, tag, in, until(Clock::now() + std::chrono::milliseconds(20)), sender_alive);
            } catch (const PeerError&) {
                continue;  // the peer's loss is the learners' to notice and report
            }
            if (!e) continue;
            try {
                take(*e, in, out);
            } catch (const PeerError&) {
                continue;  // a reply to a peer that is gone: the learners notice its loss
            } catch (const std::exception& error) {
                // A bad message ends this learner's run as a lost peer would, from the learner's
                // own thread (failure()): an exception must not leave this thread.
                std::lock_guard<std::mutex> lock(mu_);
                if (!failure_) failure_ = PeerError(e->source, error.what());
            }
        }
    }

    void take(const Envelope& e, const std::vector<char>& in, std::vector<char>& out) {
        if (mode_ == GossipMode::Pull) {
            {
                std::lock_guard<std::mutex> lock(mu_);
                out.assign(reinterpret_cast<const char*>(published_.data()),
                           reinterpret_cast<const char*>(published_.data() + published_.size()));
            }
            t_.send(e.source, kGossipModel, out.data(), out.size());
            return;
        }
        if (in.size() != inbox_.size() * sizeof(float))
            throw std::runtime_error("gossip: a model of " + std::to_string(in.size()) + " bytes from rank " +
                                     std::to_string(e.source) + " does not match this one (" +
                                     std::to_string(inbox_.size() * sizeof(float)) + " bytes)");
        const float* m = reinterpret_cast<const float*>(in.data());
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < inbox_.size(); ++i) inbox_[i] += m[i];
        ++inbox_count_;
        ++received_;
    }

    Transport& t_;
    GossipMode mode_;
    std::function<bool(int)> peer_alive_;
    std::mutex mu_;
    std::vector<float> published_, inbox_;
    int inbox_count_ = 0;
    std::atomic<int64_t> received_{0}, expected_{0};
    std::atomic<bool> stopping_{false};
    std::optional<PeerError> failure_;  // guarded by mu_
    std::thread thread_;
};

}  // namespace

GossipSummary run_gossip_learner(Transport& t, SumGroup& group, const GossipConfig& cfg, const LocalSgdWork& work) {
    const int lambda = group.members(), me = group.index();
    if (lambda < 2) throw std::runtime_error("gossip needs at least 2 learners");
    if (cfg.tau < 1 || cfg.batch <= 0 || cfg.samples_per_epoch <= 0 ||
        static_cast<int>(cfg.learner_ranks.size()) != lambda)
        throw std::logic_error("gossip: tau, batch, epoch size and the learners' ranks are needed");
    const size_t n = work.param_floats;
    float* w = work.weights;
    // Each learner's share of an epoch: the epoch's samples over lambda learners of `batch`.
    const int64_t steps_per_epoch = std::max<int64_t>(1, (cfg.samples_per_epoch + lambda * cfg.batch - 1) /
                                                             (lambda * cfg.batch));
    PeerWatch watch(cfg.silent_peer, "gossip");
    const KeepWaiting keep_waiting = watch.keep_waiting();
    std::mt19937_64 rng(cfg.seed * 1000003u + static_cast<uint64_t>(me));
    std::uniform_int_distribution<int> pick(0, lambda - 2);  // any member but this one
    const int64_t before = cfg.start_steps + cfg.start_partial;  // this learner's steps before this run
    for (int64_t e = 0; e < before / cfg.tau; ++e) pick(rng);   // the choices made before a resume
    const auto peer_alive = [silent = cfg.silent_peer](int rank) { return !silent || silent().rank != rank; };
    ModelExchange exchange(t, cfg.mode, n, peer_alive);
    exchange.publish(w);
    exchange.start();
    std::vector<int64_t> sent_to(static_cast<size_t>(lambda), 0);
    // The second sum of a boundary: each learner's squared distance from the average, the stop
    // requests, and each learner's steps into the epoch (exact in floats far beyond any epoch).
    const size_t stop_at = static_cast<size_t>(lambda), steps_at = stop_at + 1;
    std::vector<float> avg(n), peer(n), counts(2 * static_cast<size_t>(lambda) + 1);
    std::vector<char> in, out;
    GossipSummary sum;
    sum.epoch = cfg.first_epoch;
    int64_t boundary_steps = cfg.start_steps;  // each learner's steps at the last completed epoch
    StatsReporter reports(t, cfg.stats_rank, cfg.report_every);
    reports.count_sums(&group);
    const bool root = me == 0;
    int64_t epochs_sent = 0;
    const auto started = Clock::now();
    const auto elapsed = [&] { return cfg.elapsed_offset_s + seconds_since(started); };
    const auto gone = [&] { return watch.gone(); };
    const auto send_epoch = [&](int64_t epoch, double spread, bool replay) {
        EpochWeightsHeader h{};
        h.epoch = epoch;
        h.ts = boundary_steps;
        h.samples = epoch * cfg.samples_per_epoch;
        h.elapsed_s = elapsed();
        h.final = epoch == cfg.epochs ? 1 : 0;
        h.replay = replay ? 1 : 0;
        h.traffic = traffic_report(t, &group);
        h.has_spread = replay ? 0 : 1;
        h.spread = spread;
        pack(out, h, replay ? w : avg.data(), n);
        t.send(cfg.stats_rank, kEpochWeights, out.data(), out.size());
        ++epochs_sent;
    };
    try {
        if (root && cfg.replay_epoch) send_epoch(cfg.first_epoch, 0.0, true);  // every model is the checkpoint's
        for (int64_t epoch = cfg.first_epoch + 1; epoch <= cfg.epochs && !sum.stopped; ++epoch) {
            int64_t k = epoch == cfg.first_epoch + 1 ? cfg.start_partial : 0;  // steps into this epoch
            bool asked = false;
            for (; k < steps_per_epoch; ++k) {
                if (cfg.stop_requested && cfg.stop_requested()) {
                    asked = true;
                    break;
                }
                auto t0 = Clock::now();
                double loss;
                {
                    const Span span(cfg.timeline, "compute");
                    loss = work.step();
                }
                sum.compute_s += seconds_since(t0);
                if (auto bad = exchange.failure()) throw *bad;
                exchange.publish(w);
                ++sum.steps;
                if ((before + sum.steps) % cfg.tau == 0) {
                    t0 = Clock::now();
                    const Span span(cfg.timeline, cfg.mode == GossipMode::Pull ? "exchange (pull)" : "exchange (push)");
                    const int other = pick(rng);
                    const int idx = other >= me ? other + 1 : other;
                    const int rank = cfg.learner_ranks[static_cast<size_t>(idx)];
                    sum.peers.push_back(rank);
                    if (cfg.mode == GossipMode::Pull) {
                        t.send(rank, kGossipRequest, nullptr, 0);
                        const auto e = t.recv_while(rank, kGossipModel, in, keep_waiting, peer_alive);
                        if (!e) throw gone();
                        if (in.size() != n * sizeof(float))
                            throw std::runtime_error("gossip: a model of " + std::to_string(in.size()) + " bytes from rank " +
                                                     std::to_string(rank) + " does not match this one");
                        const float* m = reinterpret_cast<const float*>(in.data());
                        for (size_t i = 0; i < n; ++i) w[i] = 0.5f * (w[i] + m[i]);
                    } else {
                        out.assign(reinterpret_cast<const char*>(w), reinterpret_cast<const char*>(w + n));
                        if (!t.send_while(rank, kGossipModel, out.data(), out.size(), keep_waiting)) throw gone();
                        ++sent_to[static_cast<size_t>(idx)];
                        exchange.average_inbox(w);
                    }
                    exchange.publish(w);
                    sum.wait_s += seconds_since(t0);
                }
                reports.minibatch_done(loss, sum.steps, sum.compute_s, sum.wait_s,
                                       epoch == cfg.epochs && k + 1 == steps_per_epoch);
            }
            // The epoch boundary (or a stop within the epoch): the average model and the spread, from
            // two sums over the learners.
            const auto t0 = Clock::now();
            const Span span(cfg.timeline, "epoch boundary");
            std::copy(w, w + n, avg.begin());
            group.start(avg.data(), n);
            if (!group.wait_all(keep_waiting)) throw gone();
            double d2 = 0.0;
            for (size_t i = 0; i < n; ++i) {
                avg[i] /= static_cast<float>(lambda);
                d2 += double(w[i] - avg[i]) * double(w[i] - avg[i]);
            }
            std::fill(counts.begin(), counts.end(), 0.0f);
            counts[static_cast<size_t>(me)] = static_cast<float>(d2);
            counts[stop_at] = asked ? 1.0f : 0.0f;
            counts[steps_at + static_cast<size_t>(me)] = static_cast<float>(k);
            group.start(counts.data(), counts.size());
            if (!group.wait_all(keep_waiting)) throw gone();
            sum.wait_s += seconds_since(t0);
            const double spread = std::sqrt(*std::max_element(counts.begin(), counts.begin() + lambda));
            std::vector<int64_t> into(static_cast<size_t>(lambda));
            int64_t partial_samples = 0;
            for (int j = 0; j < lambda; ++j) {
                into[static_cast<size_t>(j)] = static_cast<int64_t>(counts[steps_at + static_cast<size_t>(j)]);
                partial_samples += into[static_cast<size_t>(j)] * cfg.batch;
            }
            const bool complete = std::all_of(into.begin(), into.end(), [&](int64_t x) { return x == steps_per_epoch; });
            if (complete) {
                sum.epoch = epoch;
                boundary_steps += steps_per_epoch;
                sum.spreads.push_back(spread);
            }
            sum.stopped = counts[stop_at] > 0.0f && (!complete || epoch < cfg.epochs);
            if (sum.stopped) reports.finish(sum.steps, sum.compute_s, sum.wait_s);
            if (!root) continue;
            if (complete) send_epoch(epoch, spread, false);
            if (cfg.checkpoint && (sum.stopped || epoch < cfg.epochs)) {
                // Within the epoch: its samples so far, short of the boundary (a resumed run counts it
                // as not yet done).
                const int64_t samples = complete ? epoch * cfg.samples_per_epoch
                                                 : (epoch - 1) * cfg.samples_per_epoch +
                                                       std::min(partial_samples, cfg.samples_per_epoch - 1);
                std::vector<int64_t> taken(static_cast<size_t>(lambda), boundary_steps);
                if (!complete)
                    for (int j = 0; j < lambda; ++j) taken[static_cast<size_t>(j)] += into[static_cast<size_t>(j)];
                cfg.checkpoint(sum.stopped ? "signal" : "epoch", avg.data(), boundary_steps, taken, samples, elapsed());
            }
            if (sum.stopped) {
                const RunEnd end{kEndSignal, sum.epoch, boundary_steps, elapsed()};
                t.send(cfg.stats_rank, kRunEnd, &end, sizeof end);
            }
        }
        // Push: how many models each learner must still take before its serving thread stops (the
        // counts are exact in floats far beyond any run's exchanges).
        int64_t expected = 0;
        if (cfg.mode == GossipMode::Push) {
            for (int j = 0; j < lambda; ++j) counts[static_cast<size_t>(j)] = static_cast<float>(sent_to[static_cast<size_t>(j)]);
            group.start(counts.data(), counts.size());
            if (!group.wait_all(keep_waiting)) throw gone();
            expected = static_cast<int64_t>(counts[static_cast<size_t>(me)]);
        }
        exchange.stop(expected);
        sum.average = std::move(avg);
        if (root && !await_stats_server(t, cfg.stats_rank, epochs_sent, keep_waiting)) throw gone();
    } catch (const PeerError& e) {
        // A lost peer, named by a wait that gave up or by the transport (a send to a dead rank):
        // the first learner has the statistics server log it and the run's end.
        if (root) report_lost_peer(t, cfg.stats_rank, watch.lost(e), lambda - 1, sum.epoch, before + sum.steps, elapsed());
        throw;
    }
    return sum;
}

}  // namespace rudra::dist
