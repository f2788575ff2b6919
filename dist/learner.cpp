#include "dist/learner.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/messages.h"
#include "kernels/aligned_buffer.h"

namespace rudra::dist {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// State shared by the compute thread and the two communication threads, under one mutex.
struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    std::exception_ptr error;
    // pull
    bool pull_requested = false, pull_in_flight = false, comm_fresh = false;
    int64_t comm_ts = -1, min_ts = 0, have_ts = -1;
    // push
    bool push_pending = false;
    int64_t push_ts = 0;
    double push_loss = 0.0;
    bool compute_done = false;
};

}  // namespace

LearnerSummary run_learner(Transport& t, const LearnerConfig& cfg, const LearnerWork& work) {
    const size_t n = work.param_floats;
    Shared s;
    kernels::AlignedBuffer comm_weights(n);
    std::vector<char> push_buf;
    push_buf.reserve(sizeof(GradientHeader) + n * sizeof(float));
    LearnerSummary summary;
    double loss_since_report = 0.0;
    int64_t losses_since_report = 0;

    auto fail = [&](std::exception_ptr e) {
        std::lock_guard<std::mutex> lock(s.mu);
        if (!s.error) s.error = e;
        s.stop = true;
        s.cv.notify_all();
    };

    std::thread pull([&] {
        std::vector<char> in;
        in.reserve(sizeof(WeightsReply) + n * sizeof(float));
        try {
            for (;;) {
                WeightsRequest req;
                {
                    std::unique_lock<std::mutex> lock(s.mu);
                    s.cv.wait(lock, [&] { return s.pull_requested || s.stop; });
                    if (s.stop) return;
                    s.pull_requested = false;
                    req = {s.have_ts, s.min_ts};
                }
                t.send(cfg.ps_rank, kWeightsRequest, &req, sizeof req);
                Envelope e = t.recv(cfg.ps_rank, kAnyTag, in);
                std::lock_guard<std::mutex> lock(s.mu);
                if (e.tag == kStop) {
                    s.stop = true;
                } else {
                    const auto reply = unpack_header<WeightsReply>(in);
                    if (reply.has_weights) {
                        // The compute thread reads comm_weights only while no pull is in flight.
                        unpack_floats<WeightsReply>(in, comm_weights.data(), n);
                        s.comm_ts = reply.ts;
                        s.comm_fresh = true;
                    }
                }
                s.pull_in_flight = false;
                s.cv.notify_all();
                if (s.stop) return;
            }
        } catch (...) {
            fail(std::current_exception());
        }
    });

    // Totals for the statistics server, read under the lock (the compute thread writes them).
    auto take_report = [&](bool done) {
        LearnerReport r{loss_since_report, losses_since_report, summary.compute_s, summary.wait_s,
                        summary.minibatches, done ? 1 : 0};
        loss_since_report = 0.0;
        losses_since_report = 0;
        return r;
    };

    std::thread push([&] {
        try {
            for (;;) {
                {
                    std::unique_lock<std::mutex> lock(s.mu);
                    s.cv.wait(lock, [&] { return s.push_pending || s.compute_done; });
                    if (!s.push_pending) break;
                }
                t.send(cfg.ps_rank, kGradient, push_buf.data(), push_buf.size());
                bool send_report;
                LearnerReport r{};
                {
                    std::lock_guard<std::mutex> lock(s.mu);
                    s.push_pending = false;
                    ++summary.minibatches;
                    loss_since_report += s.push_loss;
                    ++losses_since_report;
                    send_report = summary.minibatches % cfg.report_every == 0;
                    if (send_report) r = take_report(false);
                    s.cv.notify_all();
                }
                if (send_report) t.send(cfg.stats_rank, kLearnerReport, &r, sizeof r);
            }
            // Last messages: Bye tells the PS nothing more comes from this learner.
            t.send(cfg.ps_rank, kBye, nullptr, 0);
            LearnerReport last;
            {
                std::lock_guard<std::mutex> lock(s.mu);
                last = take_report(true);
            }
            t.send(cfg.stats_rank, kLearnerReport, &last, sizeof last);
        } catch (...) {
            fail(std::current_exception());
            std::lock_guard<std::mutex> lock(s.mu);
            s.push_pending = false;
        }
    });

    // The compute thread.
    int64_t compute_ts = -1, last_pushed_ts = -1;
    auto wait_for = [&](std::unique_lock<std::mutex>& lock, auto&& ready) {
        const auto t0 = Clock::now();
        s.cv.wait(lock, ready);
        summary.wait_s += seconds(t0, Clock::now());
    };
    try {
        for (;;) {
            std::unique_lock<std::mutex> lock(s.mu);
            // Take the weights a finished pull brought (the pointer swap of the paper is a copy
            // here: the net's layers are bound to its own parameter arena).
            auto take_fresh = [&] {
                if (s.pull_in_flight || !s.comm_fresh) return;
                work.load_weights(comm_weights.data());
                compute_ts = s.comm_ts;
                s.comm_fresh = false;
            };
            take_fresh();
            if (!s.pull_in_flight) {
                s.have_ts = compute_ts;
                s.min_ts = cfg.synchronous ? last_pushed_ts + 1 : 0;
                s.pull_requested = s.pull_in_flight = true;
                s.cv.notify_all();
            }
            // Base mode waits for the answer; overlap mode only until it holds some weights.
            if (!cfg.overlap || cfg.synchronous || compute_ts < 0) {
                wait_for(lock, [&] { return !s.pull_in_flight || s.stop; });
                take_fresh();
            }
            if (s.stop) break;
            lock.unlock();
            const auto t0 = Clock::now();
            const double loss = work.compute();
            const double spent = seconds(t0, Clock::now());
            lock.lock();
            summary.compute_s += spent;
            // One gradient in flight: wait until the previous one has left.
            wait_for(lock, [&] { return !s.push_pending || s.stop; });
            if (s.stop) break;
            pack(push_buf, GradientHeader{compute_ts, loss}, work.gradients, n);
            s.push_pending = true;
            s.push_loss = loss;
            last_pushed_ts = compute_ts;
            s.cv.notify_all();
        }
    } catch (...) {
        fail(std::current_exception());
    }
    {
        std::lock_guard<std::mutex> lock(s.mu);
        s.compute_done = true;
        s.stop = true;
        s.cv.notify_all();
    }
    pull.join();
    push.join();
    if (s.error) std::rethrow_exception(s.error);
    return summary;
}

}  // namespace rudra::dist
