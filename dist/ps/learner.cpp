#include "dist/ps/learner.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "dist/ps/ps_client.h"
#include "dist/ps/weight_broadcast.h"
#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"
#include "dist/transport/traffic.h"
#include "kernels/aligned_buffer.h"

namespace rudra::dist {
namespace {

using Clock = std::chrono::steady_clock;


// The compute loop and the two workers share one mutex and condition variable; the state of
// each piece is its own, read and written under the mutex.
struct Sync {
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;  // the PS said stop, or a piece failed
    std::exception_ptr error;

    void fail(std::exception_ptr e) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = e;
        stop = true;
        cv.notify_all();
    }
};

// Gives the model the weights in `fresh`: by a pointer swap (the model reads `fresh` from then on,
// and `fresh` becomes the buffer it has left, free to be written) or by a copy.
void hand_to_model(const LearnerWork& work, float*& fresh, float*& model) {
    if (work.use_weights) {
        work.use_weights(fresh);
        std::swap(fresh, model);
    } else {
        work.load_weights(fresh);
    }
}

// Where the compute loop's weights come from: pulls from the PS, or adv*'s broadcast. Both run
// a thread of their own; the rest is called with sync.mu held.
class WeightSource {
public:
    virtual ~WeightSource() = default;
    virtual void start() = 0;
    virtual void join() = 0;
    // Weights arrive by themselves (broadcast): nothing to request, and the loop waits only for
    // the timestamp it needs.
    virtual bool continuous() const = 0;
    virtual bool in_flight() const = 0;  // a requested pull has not been answered
    virtual void request(int64_t have_ts, int64_t min_ts) = 0;
    virtual bool fresh() const = 0;      // weights the loop has not taken yet are here
    // Hands fresh weights to the model and sets `ts` to their timestamp (nothing when none).
    virtual void take(const LearnerWork& work, int64_t& ts) = 0;
};

// pullWeights: on request, asks the PS for weights newer than the learner's and leaves them in
// its communication buffer, which the compute loop takes only while no pull is in flight: by a
// pointer swap (the model then computes on that buffer, and the next pull fills the other one,
// which the model no longer reads) or by a copy.
class PullWorker final : public WeightSource {
public:
    PullWorker(PsClient& ps, Sync& sync, size_t floats, Timeline* timeline)
        : ps_(ps), sync_(sync), timeline_(timeline), a_(floats), b_(floats) {}
    void start() override { thread_ = std::thread([this] { run(); }); }
    void join() override { thread_.join(); }

    bool continuous() const override { return false; }
    bool in_flight() const override { return in_flight_; }
    bool fresh() const override { return fresh_ && !in_flight_; }
    void request(int64_t have_ts, int64_t min_ts) override {
        have_ts_ = have_ts;
        min_ts_ = min_ts;
        requested_ = in_flight_ = true;
        sync_.cv.notify_all();
    }
    // Weights a finished pull brought: hands them to the model and sets `ts` to their timestamp.
    void take(const LearnerWork& work, int64_t& ts) override {
        if (in_flight_ || !fresh_) return;
        hand_to_model(work, comm_, compute_);  // the next pull fills the buffer the model has left
        ts = ts_;
        fresh_ = false;
    }

private:
    void run() {
        try {
            for (;;) {
                int64_t have_ts, min_ts;
                {
                    std::unique_lock<std::mutex> lock(sync_.mu);
                    sync_.cv.wait(lock, [&] { return requested_ || sync_.stop; });
                    if (sync_.stop) return;
                    requested_ = false;
                    have_ts = have_ts_;
                    min_ts = min_ts_;
                }
                PsClient::Pulled p;
                {
                    const Span span(timeline_, "pull", Lane::Pull);
                    p = ps_.pull(have_ts, min_ts, comm_);
                }
                std::lock_guard<std::mutex> lock(sync_.mu);
                if (p.stop) sync_.stop = true;
                if (p.fresh) {
                    ts_ = p.ts;
                    fresh_ = true;
                }
                in_flight_ = false;
                sync_.cv.notify_all();
                if (sync_.stop) return;
            }
        } catch (...) {
            sync_.fail(std::current_exception());
        }
    }

    PsClient& ps_;
    Sync& sync_;
    Timeline* timeline_;
    kernels::AlignedBuffer a_, b_;
    float* comm_ = a_.data();       // the next pull's target
    float* compute_ = b_.data();    // the buffer the model reads (swap only; at first its own arena)
    bool requested_ = false, in_flight_ = false, fresh_ = false;
    int64_t have_ts_ = -1, min_ts_ = 0, ts_ = -1;
    std::thread thread_;
};

// adv*: the weights come down the broadcast tree. The receiving thread takes each version from
// the broadcast parent, forwards the message to its children first (so the tree's depth costs
// little), then copies the weights into a spare buffer and swaps it with the one the compute loop
// takes from; the loop swaps that one with the buffer the model reads. Three buffers, so that
// the receiver never waits for the compute loop, and never writes one the model reads.
class BroadcastWorker final : public WeightSource {
public:
    BroadcastWorker(Transport& t, const LearnerConfig& cfg, Sync& sync, size_t floats)
        : t_(t), cfg_(cfg), sync_(sync), floats_(floats), a_(floats), b_(floats), c_(floats) {}
    void start() override { thread_ = std::thread([this] { run(); }); }
    void join() override { thread_.join(); }

    bool continuous() const override { return true; }
    bool in_flight() const override { return false; }
    void request(int64_t, int64_t) override {}
    bool fresh() const override { return fresh_; }
    void take(const LearnerWork& work, int64_t& ts) override {
        if (!fresh_) return;
        hand_to_model(work, ready_, compute_);
        ts = ts_;
        fresh_ = false;
    }

private:
    void run() {
        try {
            std::vector<char> message;
            std::vector<char> lost;
            PostedBuffers posted;
            const auto deadline_alive = [&](auto deadline) {
                return [deadline, this](int rank) {
                    {
                        std::lock_guard<std::mutex> lock(sync_.mu);
                        if (sync_.stop) return false;
                    }
                    return cfg_.peer_alive ? cfg_.peer_alive(rank) : Clock::now() < deadline;
                };
            };
            for (;;) {
                std::optional<Envelope> got;
                try {
                    const Span span(cfg_.timeline, "receive weights", Lane::Pull);
                    // From the broadcast parent, or the run's stop straight from the root PS.
                    // A version from a parent that dies while sending it may never finish
                    // arriving: after the peer timeout it is given up, and the root, which then
                    // loses that parent too, sends this learner the stop.
                    std::optional<Clock::time_point> arriving_since;
                    got = t_.recv_while(
                        kAnySource, kBroadcastWeights, message,
                        [&] {
                            std::lock_guard<std::mutex> lock(sync_.mu);
                            return !sync_.stop;
                        },
                        [&](int rank) {
                            if (cfg_.peer_alive) return cfg_.peer_alive(rank);
                            if (!arriving_since) arriving_since = Clock::now();
                            return Clock::now() - *arriving_since <
                                   std::chrono::duration<double>(cfg_.peer_timeout_s);
                        });
                } catch (const PeerError& e) {
                    if (cfg_.log)
                        cfg_.log("learner rank " + std::to_string(t_.rank()) + ": broadcast: " + e.what() +
                                 "; waiting for the next version or the stop");
                    continue;
                }
                if (!got) return;  // the learner stopped for another reason
                const auto h = unpack_header<WeightsReply>(message);
                if (!h.stop && !cfg_.broadcast_children.empty()) {
                    const Span span(cfg_.timeline, "forward weights", Lane::Pull);
                    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                             std::chrono::duration<double>(cfg_.peer_timeout_s));
                    forward_to(t_, cfg_.broadcast_children, message, deadline_alive(deadline), lost, posted, cfg_.log);
                }
                if (h.stop) {
                    std::lock_guard<std::mutex> lock(sync_.mu);
                    sync_.stop = true;
                    sync_.cv.notify_all();
                    return;
                }
                unpack_floats<WeightsReply>(message, spare_, floats_, cfg_.wire);
                std::lock_guard<std::mutex> lock(sync_.mu);
                std::swap(spare_, ready_);
                ts_ = h.ts;
                fresh_ = true;
                sync_.cv.notify_all();
            }
        } catch (...) {
            sync_.fail(std::current_exception());
        }
    }

    Transport& t_;
    const LearnerConfig& cfg_;
    Sync& sync_;
    size_t floats_;
    kernels::AlignedBuffer a_, b_, c_;
    float* compute_ = a_.data();  // the buffer the model reads (swap only)
    float* ready_ = b_.data();    // the newest version, for the compute loop
    float* spare_ = c_.data();    // the receiver's
    bool fresh_ = false;
    int64_t ts_ = -1;
    std::thread thread_;
};

// pushGradient: sends each gradient the compute loop hands over, one in flight at a time, and
// every `report_every` gradients the loss and timing totals to the statistics server. When no
// more gradients come: a last report, then Bye to the PS (nothing more from this learner).
class PushWorker {
public:
    PushWorker(Transport& t, PsClient& ps, Sync& sync, const LearnerConfig& cfg, LearnerSummary& summary)
        : t_(t), ps_(ps), sync_(sync), cfg_(cfg), summary_(summary), message_(cfg.wire) {}
    void start() { thread_ = std::thread([this] { run(); }); }
    void join() { thread_.join(); }

    // The rest with sync.mu held.
    bool idle() const { return !pending_; }
    // Packs the gradient (computed on the weights of `ts`); call only when idle().
    void hand_over(int64_t ts, double loss, const float* gradient, size_t floats) {
        message_.pack(ts, loss, gradient, floats);
        pending_ = true;
        loss_ = loss;
        sync_.cv.notify_all();
    }
    void finish() {
        done_ = true;
        sync_.cv.notify_all();
    }

private:
    // Totals for the statistics server (the compute loop writes compute_s and wait_s).
    LearnerReport take_report(bool done) {
        const LearnerReport r{loss_sum_,           loss_count_,  summary_.compute_s, summary_.wait_s,
                              summary_.minibatches, done ? 1 : 0, traffic_report(t_)};
        loss_sum_ = 0.0;
        loss_count_ = 0;
        return r;
    }

    void run() {
        try {
            for (;;) {
                {
                    std::unique_lock<std::mutex> lock(sync_.mu);
                    sync_.cv.wait(lock, [&] { return pending_ || done_; });
                    if (!pending_) break;
                }
                {
                    const Span span(cfg_.timeline, "push", Lane::Push);
                    ps_.push(message_);
                }
                bool report;
                LearnerReport r{};
                {
                    std::lock_guard<std::mutex> lock(sync_.mu);
                    pending_ = false;
                    ++summary_.minibatches;
                    loss_sum_ += loss_;
                    ++loss_count_;
                    report = summary_.minibatches % cfg_.report_every == 0;
                    if (report) r = take_report(false);
                    sync_.cv.notify_all();
                }
                if (report) t_.send(cfg_.stats_rank, kLearnerReport, &r, sizeof r);
            }
            // The last report before the goodbye: once the PS has the goodbye, the statistics
            // server has all this learner will send.
            LearnerReport last;
            {
                std::lock_guard<std::mutex> lock(sync_.mu);
                last = take_report(true);
            }
            t_.send(cfg_.stats_rank, kLearnerReport, &last, sizeof last);
            ps_.bye();
        } catch (...) {
            sync_.fail(std::current_exception());
            std::lock_guard<std::mutex> lock(sync_.mu);
            pending_ = false;
        }
    }

    Transport& t_;
    PsClient& ps_;
    Sync& sync_;
    const LearnerConfig& cfg_;
    LearnerSummary& summary_;
    GradientMessage message_;
    bool pending_ = false, done_ = false;
    double loss_ = 0.0, loss_sum_ = 0.0;  // loss_sum_, loss_count_: since the last report
    int64_t loss_count_ = 0;
    std::thread thread_;
};

}  // namespace

LearnerSummary run_learner(Transport& t, const LearnerConfig& cfg, const LearnerWork& work) {
    Sync sync;
    LearnerSummary summary;
    PsClient ps(t, cfg.ps_rank, work.param_floats, cfg.wire);
    std::unique_ptr<WeightSource> source;
    if (cfg.broadcast_parent >= 0) source = std::make_unique<BroadcastWorker>(t, cfg, sync, work.param_floats);
    else source = std::make_unique<PullWorker>(ps, sync, work.param_floats, cfg.timeline);
    WeightSource& pull = *source;
    PushWorker push(t, ps, sync, cfg, summary);
    pull.start();
    push.start();

    // The compute loop, as the paper describes the learner. Take the newest weights a pull
    // brought, and start the next pull (hardsync: for the timestamp after the last gradient
    // pushed; Rudra-base once that gradient has left). Rudra-base waits for its answer; the
    // overlap mode of Rudra-adv* computes on the weights it holds while the pull runs, and takes
    // new ones by a pointer swap between two buffers. Compute a gradient; hand it to the push
    // worker once the previous one has left.
    int64_t compute_ts = -1, last_pushed_ts = -1;
    auto wait = [&](std::unique_lock<std::mutex>& lock, const char* what, auto&& ready) {
        const Span span(cfg.timeline, what);
        const auto t0 = Clock::now();
        sync.cv.wait(lock, ready);
        summary.wait_s += seconds_since(t0);
    };
    try {
        for (;;) {
            std::unique_lock<std::mutex> lock(sync.mu);
            pull.take(work, compute_ts);
            const int64_t needed = cfg.synchronous ? last_pushed_ts + 1 : 0;
            if (pull.continuous()) {
                while (compute_ts < needed && !sync.stop) {
                    wait(lock, "wait for weights", [&] { return pull.fresh() || sync.stop; });
                    pull.take(work, compute_ts);
                }
            } else if (!pull.in_flight()) {
                // Rudra-base pushes, then pulls, as the paper's learner does: the request leaves
                // after the previous gradient, so the PS (which takes one rank's messages in
                // order) has that gradient before it answers. Overlap mode asks at once.
                if (!cfg.overlap) {
                    wait(lock, "wait for push", [&] { return push.idle() || sync.stop; });
                    if (sync.stop) break;
                }
                pull.request(compute_ts, needed);
            }
            if (!pull.continuous() && (!cfg.overlap || cfg.synchronous || cfg.wait_for_pull || compute_ts < 0)) {
                wait(lock, "wait for weights", [&] { return !pull.in_flight() || sync.stop; });
                pull.take(work, compute_ts);
            }
            if (sync.stop) break;
            lock.unlock();
            double spent = 0.0;
            const double loss = timed(cfg.timeline, "compute", spent, work.compute);
            lock.lock();
            summary.compute_s += spent;
            wait(lock, "wait for push", [&] { return push.idle() || sync.stop; });
            if (sync.stop) break;
            push.hand_over(compute_ts, loss, work.gradients, work.param_floats);
            last_pushed_ts = compute_ts;
        }
    } catch (...) {
        sync.fail(std::current_exception());
    }
    {
        std::lock_guard<std::mutex> lock(sync.mu);
        push.finish();
        sync.stop = true;
        sync.cv.notify_all();
    }
    pull.join();
    push.join();
    if (sync.error) std::rethrow_exception(sync.error);
    return summary;
}

void StatsReporter::minibatch_done(double loss, int64_t minibatches, double compute_s, double wait_s, bool last) {
    loss_sum_ += loss;
    ++loss_count_;
    if (minibatches % every_ == 0 || last) send(minibatches, compute_s, wait_s, last);
}

void StatsReporter::finish(int64_t minibatches, double compute_s, double wait_s) {
    send(minibatches, compute_s, wait_s, true);
}

void StatsReporter::send(int64_t minibatches, double compute_s, double wait_s, bool done) {
    const LearnerReport r{loss_sum_, loss_count_, compute_s, wait_s, minibatches, done ? 1 : 0, traffic_report(t_, sums_)};
    t_.send(stats_rank_, kLearnerReport, &r, sizeof r);
    loss_sum_ = 0.0;
    loss_count_ = 0;
}

}  // namespace rudra::dist
