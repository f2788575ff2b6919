// A group of ranks that sums buffers together: what the all-reduce and gossip methods
// exchange through, and what the MPI and in-process transports provide.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dist/transport/transport.h"
#include "dist/transport/wire.h"

namespace rudra::dist {

// Sums float buffers in place over a fixed group of ranks without blocking. Every member posts
// the same sequence of sums; each result is the same, bit for bit, on every member. With
// Wire::Bf16 the sum travels in BF16: each member's values are rounded to BF16 and every partial
// sum is rounded again (half the bytes; for gradients, never for counts or hashes, which BF16's
// 8 significand bits cannot hold).
class SumGroup {
public:
    virtual ~SumGroup() = default;
    virtual int members() const = 0;
    virtual int index() const = 0;  // this rank's place in the group
    virtual void start(float* data, size_t count, Wire wire = Wire::Fp32) = 0;
    virtual void progress() = 0;  // lets posted sums advance (MPI moves them only inside calls)
    // Returns true when every posted sum is complete, false when keep_waiting said stop first
    // (a member is gone: the group cannot be used again).
    virtual bool wait_all(const KeepWaiting& keep_waiting = {}) = 0;
    // The sums this member has posted and the bytes it contributed to them (the traffic counters).
    int64_t sums_posted() const { return sums_posted_; }
    int64_t sum_bytes() const { return sum_bytes_; }

protected:
    void count_sum(size_t floats, Wire wire) {
        ++sums_posted_;
        sum_bytes_ += static_cast<int64_t>(wire_bytes(wire, floats));
    }

private:
    int64_t sums_posted_ = 0, sum_bytes_ = 0;
};

}  // namespace rudra::dist
