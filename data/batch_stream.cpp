#include "data/batch_stream.h"

#include "data/skip_log.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace rudra::data {

int64_t ShuffledOrder::at(uint64_t position) {
    const int64_t e = static_cast<int64_t>(position / n_);
    if (e != epoch_) {
        perm_.resize(n_);
        std::iota(perm_.begin(), perm_.end(), 0);
        std::mt19937_64 rng(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(e));
        std::shuffle(perm_.begin(), perm_.end(), rng);
        epoch_ = e;
    }
    return perm_[position % n_];
}

Prefetcher::Prefetcher(const Dataset& d, const Transform& t, int batch, uint64_t seed, uint64_t start,
                       std::function<void()> on_start, int decode_threads, SkipLog* skipped)
    : d_(d),
      t_(t),
      batch_(batch),
      seed_(seed),
      sample_floats_(static_cast<int64_t>(d.channels) * t.out_h(d) * t.out_w(d)),
      decode_threads_(std::max(1, decode_threads)),
      skipped_(skipped),
      order_(d.size(), seed),
      scratch_(decode_threads_),
      next_position_(start) {
    if (d.size() == 0) throw DataError(d.source + ": the data set is empty");
    for (auto& s : slots_) {
        s.data.resize(static_cast<size_t>(batch) * sample_floats_);
        s.labels.resize(batch);
    }
    worker_ = std::thread([this, on_start = std::move(on_start)] {
        if (on_start) on_start();
        if (decode_threads_ > 1) pool_ = std::make_unique<WorkerPool>(decode_threads_, on_start);
        run();
        pool_.reset();
    });
}

Prefetcher::~Prefetcher() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
}

void Prefetcher::fill(Batch& b, uint64_t position) {
    b.first_position = position;
    std::vector<int64_t> index(batch_);
    for (int i = 0; i < batch_; ++i) index[i] = order_.at(position + i);
    const WorkerPool::Work one = [&](int64_t i, int worker) {
        const uint64_t p = position + i;
        ReadScratch& scratch = scratch_[worker];
        const uint8_t* pixels = nullptr;
        int64_t idx = index[i];
        for (int64_t tries = 0;; ++tries) {
            try {
                b.labels[i] = static_cast<float>(d_.read(idx, scratch, pixels));
                break;
            } catch (const DataError& e) {
                if (!skipped_) throw;
                skipped_->record(e.what());
                if (tries + 1 >= d_.size()) throw DataError(d_.source + ": no record of the set can be read");
                idx = (idx + 1) % d_.size();
            }
        }
        transform_pixels(d_, pixels, t_, /*train=*/true, seed_ ^ (p * 0xd1b54a32d192ed03ull),
                         b.data.data() + i * sample_floats_);
    };
    if (pool_) {
        pool_->run(batch_, one);
    } else {
        for (int i = 0; i < batch_; ++i) one(i, 0);
    }
}

void Prefetcher::run() {
    for (;;) {
        int slot;
        uint64_t position;
        {
            std::unique_lock<std::mutex> lock(mu_);
            // The next slot in the ring is free when it is neither full (ready_ == 2 means both
            // are) nor held by the consumer.
            cv_.wait(lock, [&] { return stop_ || (ready_ < 2 && producer_ != consumer_); });
            if (stop_) return;
            slot = producer_;
            position = next_position_;
            next_position_ += batch_;
        }
        try {
            fill(slots_[slot], position);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            error_ = std::current_exception();
            cv_.notify_all();
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            ++ready_;
            producer_ = (producer_ + 1) % 2;
        }
        cv_.notify_all();
    }
}

const Batch& Prefetcher::next() {
    std::unique_lock<std::mutex> lock(mu_);
    consumer_ = -1;  // hand the previous slot back
    cv_.notify_all();
    cv_.wait(lock, [&] { return ready_ > 0 || error_; });
    if (error_) std::rethrow_exception(error_);
    const int slot = (producer_ + 2 - ready_) % 2;
    --ready_;
    consumer_ = slot;
    cv_.notify_all();
    return slots_[slot];
}

}  // namespace rudra::data
