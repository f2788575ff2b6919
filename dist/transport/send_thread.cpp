#include "dist/transport/send_thread.h"

#include <utility>

#include "dist/transport/timeline.h"

namespace rudra::dist {

SendThread::SendThread(SendOne send_one, Timeline* timeline, const char* span)
    : send_one_(std::move(send_one)), timeline_(timeline), span_(span), thread_([this] { run(); }) {}

SendThread::~SendThread() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        quit_ = true;
        cv_.notify_all();
    }
    thread_.join();
}

bool SendThread::idle() {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_) std::rethrow_exception(error_);
    return !pending_;
}

void SendThread::send(std::vector<char>& filled) {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(filled, sending_);
    pending_ = true;
    cv_.notify_all();
}

bool SendThread::quitting() {
    std::lock_guard<std::mutex> lock(mu_);
    return quit_;
}

void SendThread::run() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return pending_ || quit_; });
            if (!pending_) return;
        }
        try {
            const Span span(timeline_, span_, Lane::Push);
            send_one_(sending_, [this] { return quitting(); }, posted_);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            error_ = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mu_);
        pending_ = false;
    }
}

}  // namespace rudra::dist
