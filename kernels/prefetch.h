// Asking for memory ahead of its use, where the hardware prefetcher does not follow the access
// pattern (masked row loads, streams a plane apart). Portable: a no-op where the compiler has no
// prefetch instruction for the target.
#pragma once

namespace rudra::kernels {

// Every cache line of floats [p, p + n) into the cache.
inline void prefetch_floats(const float* p, long n) {
    constexpr long kLineFloats = 16;
    for (long i = 0; i < n; i += kLineFloats) __builtin_prefetch(p + i, 0, 3);
}

}  // namespace rudra::kernels
