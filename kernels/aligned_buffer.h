// 64-byte aligned float storage: one cache line, the widest vector register.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace rudra::kernels {

class AlignedBuffer {
public:
    static constexpr std::size_t kAlignment = 64;

    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t count) : count_(count) {
        if (count == 0) return;
        std::size_t bytes = (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
        void* p = std::aligned_alloc(kAlignment, bytes);
        if (!p) throw std::bad_alloc();
        std::memset(p, 0, bytes);
        data_.reset(static_cast<float*>(p));
    }
    float* data() { return data_.get(); }
    const float* data() const { return data_.get(); }
    std::size_t size() const { return count_; }
    void zero() {
        if (count_) std::memset(data_.get(), 0, count_ * sizeof(float));
    }

private:
    struct Free {
        void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> data_;
    std::size_t count_ = 0;
};

}  // namespace rudra::kernels
