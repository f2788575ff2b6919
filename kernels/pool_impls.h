// The implementations behind PoolKernel (kernels/pooling.h), one file per kind:
//   pool_narrow.cpp       avx512_narrow: rows up to 32 wide, each row in two registers
//   pool_rows.cpp         avx512_rows, avx2_rows: a vector of outputs of a row per step, any
//                         width (pool_rows_body.h, written once over kernels/simd/ traits)
//   pool_portable.cpp     portable loops, compiled for each level (portable, portable_avx2, ...)
//   pooling.cpp           the lists that order them
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/pooling.h"
#include "kernels/prefetch.h"

namespace rudra::kernels::pool {

// argmax: max pooling only (nullptr for average pooling).
using ForwardFn = void (*)(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax);
using BackwardFn = void (*)(const float* dy, const int32_t* argmax, const PoolGeometry& g, long planes, float* dx);

// One kind's passes (nullptr: not written, or not in this build) and the shapes it takes.
struct Kind {
    ForwardFn max_forward = nullptr, avg_forward = nullptr;
    BackwardFn avg_backward = nullptr, max_backward = nullptr;
    std::string (*declines)(const PoolGeometry&) = nullptr;  // "" when it takes the geometry
};
Kind narrow_avx512();
Kind rows_avx512();
Kind rows_avx2();
Kind portable(Isa level);  // the portable loops compiled for `level` (empty where it is not built)

struct Window {
    int h0, h1, w0, w1;  // clipped to the image
    int divisor;         // clipped to the padded image (average pooling)
};

inline Window window(const PoolGeometry& g, int py, int px) {
    int h0 = py * g.stride_h - g.pad_h, w0 = px * g.stride_w - g.pad_w;
    int h1 = std::min(h0 + g.kernel_h, g.height + g.pad_h);
    int w1 = std::min(w0 + g.kernel_w, g.width + g.pad_w);
    int divisor = (h1 - h0) * (w1 - w0);
    h0 = std::max(h0, 0);
    w0 = std::max(w0, 0);
    h1 = std::min(h1, g.height);
    w1 = std::min(w1, g.width);
    return {h0, h1, w0, w1, divisor};
}

// The input plane a few KiB past plane p, asked for while p is pooled (call it once per plane,
// in order). The rows' masked loads did not bring the hardware prefetcher along: one thread
// max-pooled 27-wide planes at 7.5 GB/s on Zen 5, bound on their misses, and 29 GB/s with this.
inline void prefetch_ahead(const float* x, long plane_floats, long p, long planes) {
    constexpr long kAheadFloats = 1024;
    const long ahead = p + std::max(1L, kAheadFloats / plane_floats);
    if (ahead < planes) prefetch_floats(x + ahead * plane_floats, plane_floats);
}

}  // namespace rudra::kernels::pool
