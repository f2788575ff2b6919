// A fixed set of threads that share the items of one job at a time: the decode threads of a
// batch's samples. The calling thread takes part, so a pool of n runs n - 1 threads of its own.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rudra::data {

class WorkerPool {
public:
    // on_start runs first on each of the pool's own threads (the caller places them).
    explicit WorkerPool(int threads, std::function<void()> on_start = {});
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Runs work(i) for i in [0, n) on the pool and the caller; returns when all are done.
    // The first exception thrown by an item is rethrown here (the others items still run).
    void run(int64_t n, const std::function<void(int64_t)>& work);
    int threads() const { return static_cast<int>(threads_.size()) + 1; }

private:
    void serve();
    void take_items();

    std::mutex mu_;
    std::condition_variable start_, done_;
    const std::function<void(int64_t)>* work_ = nullptr;
    int64_t n_ = 0, next_ = 0, finished_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
    std::vector<std::thread> threads_;
};

}  // namespace rudra::data
