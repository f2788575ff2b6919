#include "dist/transport/heartbeat.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "dist/transport/messages.h"

namespace rudra::dist {
namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace

Heartbeat::Heartbeat(Transport& transport, HeartbeatConfig config)
    : t_(transport),
      config_(std::move(config)),
      last_ns_(new std::atomic<int64_t>[static_cast<size_t>(transport.size())]),
      notify_(new std::atomic<bool>[static_cast<size_t>(transport.size())]),
      sent_(new std::atomic<int64_t>[static_cast<size_t>(transport.size())]),
      received_(new std::atomic<int64_t>[static_cast<size_t>(transport.size())]) {
    const int64_t start = now_ns();
    for (int r = 0; r < t_.size(); ++r) {
        last_ns_[r] = start;
        notify_[r] = false;
        sent_[r] = 0;
        received_[r] = 0;
    }
    for (int r : config_.notify) notify_[r] = true;
    thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() { stop(); }

void Heartbeat::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Heartbeat::beat_received(int rank) {
    heard(rank);
    ++received_[rank];
}

bool Heartbeat::drain(const KeepWaiting& keep_waiting) {
    stop();
    const int me = t_.rank();
    for (int r = 0; r < t_.size(); ++r) {
        if (r == me) continue;
        const int64_t sent = sent_[r];
        if (!t_.send_while(r, kHeartbeatCount, &sent, sizeof sent, keep_waiting)) return false;
    }
    std::vector<char> buf;
    for (int r = 0; r < t_.size(); ++r) {
        if (r == me) continue;
        if (!t_.recv_while(r, kHeartbeatCount, buf, keep_waiting)) return false;
        int64_t expected = 0;
        if (buf.size() == sizeof expected) std::memcpy(&expected, buf.data(), sizeof expected);
        for (; received_[r] < expected; ++received_[r])
            if (!t_.recv_while(r, kHeartbeat, buf, keep_waiting)) return false;
    }
    return true;
}

void Heartbeat::heard(int rank) { last_ns_[rank].store(now_ns(), std::memory_order_relaxed); }

double Heartbeat::silent_s(int rank) const {
    const double silent = static_cast<double>(now_ns() - last_ns_[rank].load(std::memory_order_relaxed)) * 1e-9;
    // Only a rank silent for a while is probed: the probe is an MPI call.
    if (silent > 2 * config_.interval_s && silent <= config_.pending_grace_s) {
        try {
            if (t_.pending_from(rank)) return 0.0;
        } catch (const PeerError&) {
        }
    }
    return silent;
}

void Heartbeat::notify(int rank) { notify_[rank] = true; }

void Heartbeat::stop_notifying(int rank) { notify_[rank] = false; }

void Heartbeat::run() {
    const auto interval = clock_duration(config_.interval_s);
    // Heartbeats are received (and the watched rank checked) several times per interval, apart
    // from the sends: a send to a dead peer may take its whole time limit, and when receiving
    // waited for the sends, the beats of live ranks were recorded up to an interval late. With a
    // 1 s interval and a 3 s timeout, that made a live rank look silent for 3 s right after
    // another rank was killed, and the wrong rank was named lost.
    const auto poll = std::min<Clock::duration>(interval / 10, std::chrono::milliseconds(100));
    std::vector<char> buf;
    bool reported = false;
    auto next_send = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        lock.unlock();
        const auto poll_end = Clock::now() + poll;
        if (Clock::now() >= next_send) {
            next_send += interval;
            if (next_send < Clock::now()) next_send = Clock::now() + interval;  // after a long stall
            // An empty message goes eagerly: its send completes even when the peer is gone. Should
            // it not within a poll, it is left posted and the next interval tries again.
            for (int r = 0; r < t_.size(); ++r) {
                if (!notify_[r]) continue;
                try {
                    t_.send_while(r, kHeartbeat, nullptr, 0, until(poll_end));
                    ++sent_[r];  // posted: delivered to a live peer, even if not complete yet
                } catch (const PeerError&) {
                    notify_[r] = false;  // gone: its silence tells the watchers
                }
            }
        }
        // Every heartbeat waiting for this rank (a tagged probe never takes another message).
        try {
            while (auto e = t_.recv_while(kAnySource, kHeartbeat, buf, [] { return false; })) beat_received(e->source);
        } catch (const PeerError&) {
            // a heartbeat from a rank that died while sending it: its silence tells the watchers
        }
        if (config_.watch >= 0 && !reported && config_.on_silent) {
            const double silent = silent_s(config_.watch);
            if (silent > config_.timeout_s) {
                reported = true;
                config_.on_silent(config_.watch, silent);
            }
        }
        lock.lock();
        cv_.wait_until(lock, poll_end, [&] { return stop_; });
    }
}

}  // namespace rudra::dist
