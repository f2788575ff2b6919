// Code written once over a vector-traits struct (kernels/simd/avx2.h, avx512.h) and compiled
// once per level: a file opens the level's target region, includes the traits and the body, and
// closes it. Every function defined inside the region carries the level's features (as
// RUDRA_TARGET_* would give one function), so a template body instantiated for AVX2 never holds
// an AVX-512 instruction. Only the project's own code goes inside: standard headers are included
// before the region opens, so their inline functions stay baseline code (see isa_target.h).
#pragma once
// What the traits and bodies use, included here, before any region opens.
#include <algorithm>
#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// A traits operation: inlined into the body that uses it, inside the same region.
#define RUDRA_SIMD static inline __attribute__((always_inline))

#if defined(__clang__)
#define RUDRA_BEGIN_TARGET_AVX2 \
    _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
// One string literal: _Pragma does not join adjacent ones.
#define RUDRA_BEGIN_TARGET_AVX512 \
    _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,avx512f,avx512dq,avx512bw,avx512vl\"))), apply_to = function)")
#define RUDRA_BEGIN_TARGET_AVX512_BF16 \
    _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16\"))), apply_to = function)")
#define RUDRA_END_TARGET _Pragma("clang attribute pop")
#else
// GCC 12's intrinsics start some values undefined (_mm256_undefined_pd() and the like), which
// -Wuninitialized and -Wmaybe-uninitialized report inside target code; they are never read.
#define RUDRA_GCC_QUIET_UNDEFINED_VECTORS                                                  \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
        _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define RUDRA_BEGIN_TARGET_AVX2 \
    RUDRA_GCC_QUIET_UNDEFINED_VECTORS _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define RUDRA_BEGIN_TARGET_AVX512                                   \
    RUDRA_GCC_QUIET_UNDEFINED_VECTORS _Pragma("GCC push_options") \
        _Pragma("GCC target(\"avx2,fma,avx512f,avx512dq,avx512bw,avx512vl\")")
#define RUDRA_BEGIN_TARGET_AVX512_BF16                              \
    RUDRA_GCC_QUIET_UNDEFINED_VECTORS _Pragma("GCC push_options") \
        _Pragma("GCC target(\"avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16\")")
#define RUDRA_END_TARGET _Pragma("GCC pop_options") _Pragma("GCC diagnostic pop")
#endif
