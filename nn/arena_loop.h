// A loop over a parameter arena: on the OpenMP team when the arena is large (a parameter
// server's 61M-parameter model), inline otherwise. A parallel region costs a runtime call even
// when its `if` keeps it serial, which for small arenas slowed every update (and under TSan by
// far more).
#pragma once

namespace rudra::nn {

inline constexpr long kParallelFloats = 1L << 18;

template <class Body>
inline void arena_loop(long n, Body&& body) {
    if (n >= kParallelFloats) {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; ++i) body(i);
    } else {
#pragma omp simd
        for (long i = 0; i < n; ++i) body(i);
    }
}

}  // namespace rudra::nn
