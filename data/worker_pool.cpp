#include "data/worker_pool.h"

namespace rudra::data {

WorkerPool::WorkerPool(int threads, std::function<void()> on_start) {
    for (int t = 1; t < threads; ++t)
        threads_.emplace_back([this, on_start, t] {
            if (on_start) on_start();
            serve(t);
        });
}

WorkerPool::~WorkerPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
}

void WorkerPool::take_items(int worker) {
    std::unique_lock<std::mutex> lock(mu_);
    while (work_ && next_ < n_) {
        const int64_t i = next_++;
        const auto* work = work_;
        lock.unlock();
        std::exception_ptr e;
        try {
            (*work)(i, worker);
        } catch (...) {
            e = std::current_exception();
        }
        lock.lock();
        if (e && !error_) error_ = e;
        if (++finished_ == n_) done_.notify_all();
    }
}

void WorkerPool::serve(int worker) {
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            start_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
        }
        take_items(worker);
    }
}

void WorkerPool::run(int64_t n, const Work& work) {
    if (n <= 0) return;
    {
        std::lock_guard<std::mutex> lock(mu_);
        work_ = &work;
        n_ = n;
        next_ = finished_ = 0;
        error_ = nullptr;
        ++generation_;
    }
    start_.notify_all();
    take_items(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return finished_ == n_; });
    work_ = nullptr;
    if (error_) std::rethrow_exception(error_);
}

}  // namespace rudra::data
