#include "dist/weight_broadcast.h"

#include <utility>

#include "dist/messages.h"
#include "dist/timeline.h"

namespace rudra::dist {

int forward_to(Transport& t, const std::vector<int>& children, std::vector<char>& bytes,
               const std::function<bool(int)>& alive, std::vector<char>& lost,
               std::vector<std::vector<char>>& abandoned, const std::function<void(const std::string&)>& log) {
    lost.resize(children.size(), 0);
    int took = 0;
    for (size_t i = 0; i < children.size(); ++i) {
        if (lost[i]) continue;
        const int child = children[i];
        bool sent = false;
        try {
            sent = t.send_while(child, kBroadcastWeights, bytes.data(), bytes.size(), [&] { return alive(child); });
        } catch (const PeerError& e) {
            if (log) log(std::string("broadcast: ") + e.what());
        }
        if (sent) {
            ++took;
            continue;
        }
        lost[i] = 1;
        if (log) log("broadcast: rank " + std::to_string(child) + " did not take the weights; it is left out");
        // The send stays posted: its buffer is kept until the end, and the caller goes on with a copy.
        abandoned.push_back(std::move(bytes));
        bytes = abandoned.back();
    }
    return took;
}

BroadcastSender::BroadcastSender(Transport& t, std::vector<int> children, std::function<bool(int)> alive,
                                 Timeline* timeline, std::function<void(const std::string&)> log)
    : t_(t), children_(std::move(children)), alive_(std::move(alive)), timeline_(timeline), log_(std::move(log)),
      thread_([this] { run(); }) {}

BroadcastSender::~BroadcastSender() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        quit_ = true;
        cv_.notify_all();
    }
    thread_.join();
}

bool BroadcastSender::idle() {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_) std::rethrow_exception(error_);
    return !pending_;
}

void BroadcastSender::send() {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(next_, sending_);
    pending_ = true;
    cv_.notify_all();
}

void BroadcastSender::run() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return pending_ || quit_; });
            if (!pending_) return;
        }
        try {
            const Span span(timeline_, "broadcast weights", Lane::Push);
            forward_to(
                t_, children_, sending_,
                [&](int child) {
                    std::lock_guard<std::mutex> lock(mu_);
                    return !quit_ && alive_(child);
                },
                lost_, abandoned_, log_);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            error_ = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mu_);
        pending_ = false;
    }
}

}  // namespace rudra::dist
