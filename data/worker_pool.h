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

    // Runs work(i, worker) for i in [0, n) on the pool and the caller; returns when all are
    // done. worker, in [0, threads()), names the thread running the item (0: the caller), so
    // that each can keep buffers of its own. The first exception thrown by an item is rethrown
    // here (the other items still run).
    using Work = std::function<void(int64_t item, int worker)>;
    void run(int64_t n, const Work& work);
    int threads() const { return static_cast<int>(threads_.size()) + 1; }

private:
    void serve(int worker);
    void take_items(int worker);

    std::mutex mu_;
    std::condition_variable start_, done_;
    const Work* work_ = nullptr;
    int64_t n_ = 0, next_ = 0, finished_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
    std::vector<std::thread> threads_;
};

}  // namespace rudra::data
