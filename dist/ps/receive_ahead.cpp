#include "dist/ps/receive_ahead.h"

#include <chrono>
#include <utility>

namespace rudra::dist {

ReceiveAhead::ReceiveAhead(Transport& t, std::function<bool(int)> sender_alive,
                           std::function<void(const std::string&)> log)
    : t_(t), sender_alive_(std::move(sender_alive)), log_(std::move(log)), thread_([this] { run(); }) {}

ReceiveAhead::~ReceiveAhead() { stop(); }

void ReceiveAhead::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        quit_ = true;
        cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
}

bool ReceiveAhead::quitting() {
    std::lock_guard<std::mutex> lock(mu_);
    return quit_;
}

std::optional<Envelope> ReceiveAhead::next(std::vector<char>& buf, const KeepWaiting& keep_waiting) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        if (error_) std::rethrow_exception(error_);
        if (ready_) {
            std::swap(buf, spare_);
            ready_ = false;
            cv_.notify_all();  // the thread receives the next one meanwhile
            return envelope_;
        }
        if (keep_waiting && !keep_waiting()) return std::nullopt;
        cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
}

void ReceiveAhead::run() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return !ready_ || quit_; });
            if (quit_) return;
        }
        std::optional<Envelope> e;
        try {
            e = t_.recv_while(kAnySource, kAnyTag, spare_, [this] { return !quitting(); }, sender_alive_);
        } catch (const PeerError& error) {
            // A rank that died while sending: no message; its silence tells the owner.
            if (log_) log_(error.what());
            continue;
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            error_ = std::current_exception();
            cv_.notify_all();
            return;
        }
        if (!e) continue;  // quitting: the loop's check ends the thread
        std::lock_guard<std::mutex> lock(mu_);
        envelope_ = *e;
        ready_ = true;
        cv_.notify_all();
    }
}

}  // namespace rudra::dist
