// Mini-batches drawn from a seeded stream of shuffled epochs, prepared by an I/O thread one
// batch ahead of the computation. The stream position (samples handed out so far) is all that
// is needed to resume exactly.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.h"
#include "data/transform.h"
#include "data/worker_pool.h"

namespace rudra::data {

// Position p of the stream is sample perm_e[p mod N] of epoch e = p / N; each epoch's
// permutation is a seeded shuffle.
class ShuffledOrder {
public:
    ShuffledOrder(int64_t n, uint64_t seed) : n_(n), seed_(seed) {}
    int64_t at(uint64_t position);

private:
    int64_t n_;
    uint64_t seed_;
    int64_t epoch_ = -1;
    std::vector<int64_t> perm_;
};

struct Batch {
    std::vector<float> data;    // [batch, C, H, W] after the transform
    std::vector<float> labels;  // [batch]
    uint64_t first_position = 0;
};

class Prefetcher {
public:
    // on_start, when given, runs first on the I/O thread and on each decode thread (the caller
    // sets their CPU affinity there). decode_threads: how many threads read, decode and
    // transform a batch's samples (the I/O thread among them).
    // skipped: records that cannot be read are recorded there and replaced by the next record of
    // the set that can (null: the error stops the stream).
    Prefetcher(const Dataset& d, const Transform& t, int batch, uint64_t seed, uint64_t start_position,
               std::function<void()> on_start = {}, int decode_threads = 1, SkipLog* skipped = nullptr);
    ~Prefetcher();
    Prefetcher(const Prefetcher&) = delete;
    Prefetcher& operator=(const Prefetcher&) = delete;

    // The next batch; valid until the following call. Rethrows an error of the I/O thread.
    const Batch& next();
    int64_t sample_floats() const { return sample_floats_; }

private:
    void run();
    void fill(Batch& b, uint64_t position);

    const Dataset& d_;
    const Transform t_;
    const int batch_;
    const uint64_t seed_;
    const int64_t sample_floats_;
    const int decode_threads_;
    SkipLog* const skipped_;
    ShuffledOrder order_;
    std::vector<ReadScratch> scratch_;  // one per decode thread
    Batch slots_[2];
    int ready_ = 0;      // batches filled and not yet taken (0..2)
    int consumer_ = -1;  // slot the consumer holds, -1 none
    int producer_ = 0;   // slot to fill next
    bool stop_ = false;
    std::exception_ptr error_;
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t next_position_;
    std::unique_ptr<WorkerPool> pool_;  // made on the I/O thread
    std::thread worker_;
};

}  // namespace rudra::data
