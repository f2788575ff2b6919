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
#include "session/run_loop.h"

namespace rudra::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The model as peers see it, and (push) the models received from them. The serving thread
// answers pulls and takes pushes while the learner computes.
class ModelExchange {
public:
    // `peer_alive(rank)`: false once `rank` is known to be lost (empty: never known).
    ModelExchange(Transport& t, GossipMode mode, Wire wire, size_t n, std::function<bool(int)> peer_alive)
        : t_(t), mode_(mode), wire_(wire), peer_alive_(std::move(peer_alive)), published_(wire_bytes(wire, n)),
          inbox_(n, 0.0f), received_model_(n) {}
    ~ModelExchange() { stop(); }

    // The model as the wire carries it, encoded once for every pull until the next publish.
    void publish(const float* w) {
        std::lock_guard<std::mutex> lock(mu_);
        wire_encode(wire_, w, inbox_.size(), published_.data());
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
                out = published_;
            }
            t_.send(e.source, kGossipModel, out.data(), out.size());
            return;
        }
        if (in.size() != wire_bytes(wire_, inbox_.size()))
            throw std::runtime_error("gossip: a model of " + std::to_string(in.size()) + " bytes from rank " +
                                     std::to_string(e.source) + " does not match this one (" +
                                     std::to_string(wire_bytes(wire_, inbox_.size())) + " bytes, --wire " +
                                     wire_name(wire_) + ")");
        wire_decode(wire_, in.data(), inbox_.size(), received_model_.data());  // only this thread uses it
        const float* m = received_model_.data();
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < inbox_.size(); ++i) inbox_[i] += m[i];
        ++inbox_count_;
        ++received_;
    }

    Transport& t_;
    GossipMode mode_;
    Wire wire_;
    std::function<bool(int)> peer_alive_;
    std::mutex mu_;
    std::vector<char> published_;  // guarded by mu_
    std::vector<float> inbox_, received_model_;
    int inbox_count_ = 0;
    std::atomic<int64_t> received_{0}, expected_{0};
    std::atomic<bool> stopping_{false};
    std::optional<PeerError> failure_;  // guarded by mu_
    std::thread thread_;
};

// One learner of a gossip run: its local steps, its exchanges with a peer every tau steps, and
// the learners' meeting at each epoch boundary (or a stop).
class GossipLearner : public session::RunMethod {
public:
    GossipLearner(Transport& t, SumGroup& group, const GossipConfig& cfg, const LocalSgdWork& work)
        : t_(t), group_(group), cfg_(cfg), work_(work), lambda_(group.members()), me_(group.index()),
          n_(work.param_floats), w_(work.weights),
          // Each learner's share of an epoch: the epoch's samples over lambda learners of `batch`.
          steps_per_epoch_(std::max<int64_t>(1, (cfg.samples_per_epoch + lambda_ * cfg.batch - 1) / (lambda_ * cfg.batch))),
          watch_(cfg.silent_peer, "gossip"), keep_waiting_(watch_.keep_waiting()),
          rng_(cfg.seed * 1000003u + static_cast<uint64_t>(me_)), pick_(0, lambda_ - 2),  // any member but this one
          before_(cfg.start_steps + cfg.start_partial),
          peer_alive_([silent = cfg.silent_peer](int rank) { return !silent || silent().rank != rank; }),
          exchange_(t, cfg.mode, cfg.wire, n_, peer_alive_), sent_to_(static_cast<size_t>(lambda_), 0), avg_(n_), counts_(2 * static_cast<size_t>(lambda_) + 1),
          reports_(t, cfg.stats_rank, cfg.report_every), stats_(t, cfg.stats_rank, &group), root_(me_ == 0),
          started_(Clock::now()) {
        for (int64_t e = 0; e < before_ / cfg.tau; ++e) pick_(rng_);  // the choices made before a resume
        sum_.epoch = cfg.first_epoch;
        boundary_steps_ = cfg.start_steps;
        reports_.count_sums(&group);
    }

    GossipSummary run() {
        // The loop counts this learner's local steps: an epoch is its share of the epoch's samples.
        session::RunPlan plan;
        plan.samples_per_epoch = steps_per_epoch_;
        plan.total_samples = cfg_.epochs * steps_per_epoch_;
        plan.start = {before_, cfg_.first_epoch * steps_per_epoch_ + cfg_.start_partial, 0, 0.0};
        // Resumed after taking all its share of the epoch, this learner still owes the others its
        // meeting: its first step is one short of the boundary and takes no step (step()).
        owes_meeting_ = cfg_.start_partial >= steps_per_epoch_ && cfg_.first_epoch < cfg_.epochs;
        if (owes_meeting_) plan.start.samples -= 1;
        plan.elapsed_offset_s = cfg_.elapsed_offset_s;
        plan.checkpoint_at_epochs = true;
        plan.stop_requested = cfg_.stop_requested;
        try {
            sum_.stopped = session::run_loop(*this, plan).stopped;
        } catch (const PeerError& e) {
            // A lost peer, named by a wait that gave up or by the transport (a send to a dead rank):
            // the first learner has the statistics server log it and the run's end.
            if (root_) {
                const SilentPeer lost = watch_.lost(e);
                stats_.lost_peer(lost.rank, lost.silent_s, lambda_ - 1, sum_.epoch, before_ + sum_.steps, elapsed());
            }
            throw;
        }
        return std::move(sum_);
    }

    // A stop asked within an epoch ends this learner's epoch there: it meets the others at once.
    bool stops_together() const override { return true; }
    bool keeps_checkpoints() const override { return root_ && static_cast<bool>(cfg_.checkpoint); }

    void begin(const session::RunPosition&) override {
        exchange_.publish(w_);
        exchange_.start();
        if (root_ && cfg_.replay_epoch) send_epoch(cfg_.first_epoch, 0.0, true);  // every model is the checkpoint's
    }

    // One local step, then an exchange every tau steps; or, asked to stop, the meeting.
    session::StepDone step(const session::RunPosition& at, bool stop_asked) override {
        if (owes_meeting_) {
            owes_meeting_ = false;
            return {1, false, 0};  // the loop's epoch end holds the meeting
        }
        const int64_t epoch = at.samples / steps_per_epoch_ + 1, k = at.samples % steps_per_epoch_;
        if (stop_asked) return {0, meet(epoch, true, k), 0};
        const double loss = timed(cfg_.timeline, "compute", sum_.compute_s, work_.step);
        if (auto bad = exchange_.failure()) throw *bad;
        exchange_.publish(w_);
        ++sum_.steps;
        if ((before_ + sum_.steps) % cfg_.tau == 0) exchange_with_peer();
        reports_.minibatch_done(loss, sum_.steps, sum_.compute_s, sum_.wait_s,
                                epoch == cfg_.epochs && k + 1 == steps_per_epoch_);
        return {1, false, 1};
    }

    bool epoch_end(const session::RunPosition& at, bool) override { return meet(at.epoch, false, steps_per_epoch_); }

    bool save(session::CheckpointWhy why, const session::RunPosition& at) override {
        cfg_.checkpoint(session::reason_name(why), avg_.data(), boundary_steps_,
                        met_taken_, met_samples_, at.elapsed_s);
        return true;
    }

    void end(const session::RunPosition& at, bool stopped) override {
        if (root_ && stopped) stats_.stopped(sum_.epoch, boundary_steps_, at.elapsed_s);
        exchange_.stop(pushes_to_take());
        sum_.average = std::move(avg_);
        if (root_ && !stats_.await_done(keep_waiting_)) throw watch_.gone();
    }

private:
    double elapsed() const { return cfg_.elapsed_offset_s + seconds_since(started_); }

    // Pull: averages with a random peer's model. Push: sends this model to the peer, and averages
    // with the models received since the last round.
    void exchange_with_peer() {
        const auto t0 = Clock::now();
        const Span span(cfg_.timeline, cfg_.mode == GossipMode::Pull ? "exchange (pull)" : "exchange (push)");
        const int other = pick_(rng_);
        const int idx = other >= me_ ? other + 1 : other;
        const int rank = cfg_.learner_ranks[static_cast<size_t>(idx)];
        sum_.peers.push_back(rank);
        if (cfg_.mode == GossipMode::Pull) {
            t_.send(rank, kGossipRequest, nullptr, 0);
            const auto e = t_.recv_while(rank, kGossipModel, in_, keep_waiting_, peer_alive_);
            if (!e) throw watch_.gone();
            if (in_.size() != wire_bytes(cfg_.wire, n_))
                throw std::runtime_error("gossip: a model of " + std::to_string(in_.size()) + " bytes from rank " +
                                         std::to_string(rank) + " does not match this one (--wire " +
                                         wire_name(cfg_.wire) + ")");
            peer_model_.resize(n_);
            wire_decode(cfg_.wire, in_.data(), n_, peer_model_.data());
            for (size_t i = 0; i < n_; ++i) w_[i] = 0.5f * (w_[i] + peer_model_[i]);
        } else {
            out_.resize(wire_bytes(cfg_.wire, n_));
            wire_encode(cfg_.wire, w_, n_, out_.data());
            if (!t_.send_while(rank, kGossipModel, out_.data(), out_.size(), keep_waiting_)) throw watch_.gone();
            ++sent_to_[static_cast<size_t>(idx)];
            exchange_.average_inbox(w_);
        }
        exchange_.publish(w_);
        sum_.wait_s += seconds_since(t0);
    }

    // The epoch boundary (or a stop within the epoch): the average model and the spread, from two
    // sums over the learners (the second: each learner's squared distance from the average, the
    // stop requests, and each learner's steps into the epoch, exact in floats far beyond any
    // epoch). Then the first learner sends the epoch's average. Returns true when the learners
    // stop here, short of the run's end.
    bool meet(int64_t epoch, bool asked, int64_t k) {
        const size_t stop_at = static_cast<size_t>(lambda_), steps_at = stop_at + 1;
        const auto t0 = Clock::now();
        const Span span(cfg_.timeline, "epoch boundary");
        std::copy(w_, w_ + n_, avg_.begin());
        group_.start(avg_.data(), n_);
        if (!group_.wait_all(keep_waiting_)) throw watch_.gone();
        double d2 = 0.0;
        for (size_t i = 0; i < n_; ++i) {
            avg_[i] /= static_cast<float>(lambda_);
            d2 += double(w_[i] - avg_[i]) * double(w_[i] - avg_[i]);
        }
        std::fill(counts_.begin(), counts_.end(), 0.0f);
        counts_[static_cast<size_t>(me_)] = static_cast<float>(d2);
        counts_[stop_at] = asked ? 1.0f : 0.0f;
        counts_[steps_at + static_cast<size_t>(me_)] = static_cast<float>(k);
        group_.start(counts_.data(), counts_.size());
        if (!group_.wait_all(keep_waiting_)) throw watch_.gone();
        sum_.wait_s += seconds_since(t0);
        const double spread = std::sqrt(*std::max_element(counts_.begin(), counts_.begin() + lambda_));
        std::vector<int64_t> into(static_cast<size_t>(lambda_));
        int64_t partial_samples = 0;
        for (int j = 0; j < lambda_; ++j) {
            into[static_cast<size_t>(j)] = static_cast<int64_t>(counts_[steps_at + static_cast<size_t>(j)]);
            partial_samples += into[static_cast<size_t>(j)] * cfg_.batch;
        }
        const bool complete =
            std::all_of(into.begin(), into.end(), [&](int64_t x) { return x == steps_per_epoch_; });
        if (complete) {
            sum_.epoch = epoch;
            boundary_steps_ += steps_per_epoch_;
            sum_.spreads.push_back(spread);
        }
        sum_.stopped = counts_[stop_at] > 0.0f && (!complete || epoch < cfg_.epochs);
        if (sum_.stopped) reports_.finish(sum_.steps, sum_.compute_s, sum_.wait_s);
        if (root_) {
            if (complete) send_epoch(epoch, spread, false);
            // A checkpoint's samples: within the epoch, its samples so far, short of the boundary
            // (a resumed run counts it as not yet done).
            met_samples_ = complete ? epoch * cfg_.samples_per_epoch
                                    : (epoch - 1) * cfg_.samples_per_epoch +
                                          std::min(partial_samples, cfg_.samples_per_epoch - 1);
            met_taken_.assign(static_cast<size_t>(lambda_), boundary_steps_);
            if (!complete)
                for (int j = 0; j < lambda_; ++j) met_taken_[static_cast<size_t>(j)] += into[static_cast<size_t>(j)];
        }
        return sum_.stopped;
    }

    void send_epoch(int64_t epoch, double spread, bool replay) {
        EpochWeightsHeader h{};
        h.epoch = epoch;
        h.ts = boundary_steps_;
        h.samples = epoch * cfg_.samples_per_epoch;
        h.elapsed_s = elapsed();
        h.final = epoch == cfg_.epochs ? 1 : 0;
        h.replay = replay ? 1 : 0;
        h.has_spread = replay ? 0 : 1;
        h.spread = spread;
        stats_.send_epoch(h, replay ? w_ : avg_.data(), n_);
    }

    // Push: how many models this learner must still take before its serving thread stops (the
    // counts are exact in floats far beyond any run's exchanges); pull: 0.
    int64_t pushes_to_take() {
        if (cfg_.mode != GossipMode::Push) return 0;
        for (int j = 0; j < lambda_; ++j) counts_[static_cast<size_t>(j)] = static_cast<float>(sent_to_[static_cast<size_t>(j)]);
        group_.start(counts_.data(), counts_.size());
        if (!group_.wait_all(keep_waiting_)) throw watch_.gone();
        return static_cast<int64_t>(counts_[static_cast<size_t>(me_)]);
    }

    Transport& t_;
    SumGroup& group_;
    const GossipConfig& cfg_;
    const LocalSgdWork& work_;
    const int lambda_, me_;
    const size_t n_;
    float* w_;
    const int64_t steps_per_epoch_;
    PeerWatch watch_;
    const KeepWaiting keep_waiting_;
    std::mt19937_64 rng_;
    std::uniform_int_distribution<int> pick_;
    const int64_t before_;  // this learner's steps before this run
    const std::function<bool(int)> peer_alive_;
    ModelExchange exchange_;
    std::vector<int64_t> sent_to_;
    std::vector<float> avg_, counts_, peer_model_;
    std::vector<char> in_, out_;
    GossipSummary sum_;
    int64_t boundary_steps_ = 0;  // each learner's steps at the last completed epoch
    bool owes_meeting_ = false;
    int64_t met_samples_ = 0;     // at the last meeting: the samples a checkpoint records, and
    std::vector<int64_t> met_taken_;  // each learner's steps
    StatsReporter reports_;
    StatsLink stats_;
    const bool root_;
    const Clock::time_point started_;
};

}  // namespace

GossipSummary run_gossip_learner(Transport& t, SumGroup& group, const GossipConfig& cfg, const LocalSgdWork& work) {
    if (group.members() < 2) throw std::runtime_error("gossip needs at least 2 learners");
    if (cfg.tau < 1 || cfg.batch <= 0 || cfg.samples_per_epoch <= 0 ||
        static_cast<int>(cfg.learner_ranks.size()) != group.members())
        throw std::logic_error("gossip: tau, batch, epoch size and the learners' ranks are needed");
    return GossipLearner(t, group, cfg, work).run();
}

}  // namespace rudra::dist
