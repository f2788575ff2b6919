// 64-byte aligned float storage: one cache line, the widest vector register.
//
// Buffers of 4 MiB and more (the parameter, gradient and activation arenas, the solver's history)
// start on a 2 MiB boundary, span whole 2 MiB pages and ask Linux for transparent huge pages,
// which Debian gives only on request (enabled=madvise). With 4 KiB pages every pass over a large
// tensor misses the TLB each 4 KiB and the hardware prefetchers stop at each page's end: AlexNet's
// training step at mini-batch 32 on a Zen 3 ran 5-10% faster with huge pages (bench/results/image_input.md).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rudra::kernels {

class AlignedBuffer {
public:
    static constexpr std::size_t kAlignment = 64;
    static constexpr std::size_t kHugePage = std::size_t{2} << 20;
    static constexpr std::size_t kHugeFrom = std::size_t{4} << 20;  // bytes from which huge pages are asked for

    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t count) : count_(count) {
        if (count == 0) return;
        const std::size_t asked = count * sizeof(float);
        const std::size_t align = asked >= kHugeFrom ? kHugePage : kAlignment;
        const std::size_t bytes = (asked + align - 1) / align * align;
        void* p = std::aligned_alloc(align, bytes);
        if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        // A hint: where the kernel has no transparent huge pages (or they are off) it fails or is
        // ignored, and the buffer keeps small pages.
        if (align == kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
#endif
        std::memset(p, 0, bytes);  // after the hint: the first touch is what allocates the pages
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
