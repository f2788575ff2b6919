// x86-64 micro-kernels. Each function carries its own target attribute, so this file builds with
// any -march and the dispatcher decides at run time which one the CPU can execute.
// Vectors run along the rows of C (NR = 2 vectors); each step broadcasts MR values of A and does
// 2 * MR FMAs on two loads of B.
#include "kernels/sgemm/micro_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace rudra::kernels {
namespace {

// AVX-512: 12 x 32 tile, 24 zmm accumulators + 2 for B + 1 broadcast of the 32 registers.
constexpr int kMR512 = 12, kNR512 = 32;

__attribute__((target("avx512f"))) void run_avx512(int64_t k, const float* a, const float* b, int64_t rs_b,
                                                     float* c, int64_t rs_c, float alpha, float beta) {
    __m512 lo[kMR512], hi[kMR512];
#pragma GCC unroll 16
    for (int i = 0; i < kMR512; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; ++p, a += kMR512, b += rs_b) {
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < kMR512; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < kMR512; ++i, c += rs_c) {
        __m512 r0 = _mm512_mul_ps(va, lo[i]), r1 = _mm512_mul_ps(va, hi[i]);
        if (beta != 0.0f) {
            r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(c), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(c + 16), r1);
        }
        _mm512_storeu_ps(c, r0);
        _mm512_storeu_ps(c + 16, r1);
    }
}

// AVX2 + FMA: 6 x 16 tile, 12 ymm accumulators + 2 for B + 1 broadcast of the 16 registers.
constexpr int kMR256 = 6, kNR256 = 16;

__attribute__((target("avx2,fma"))) void run_avx2(int64_t k, const float* a, const float* b, int64_t rs_b,
                                                    float* c, int64_t rs_c, float alpha, float beta) {
    __m256 lo[kMR256], hi[kMR256];
#pragma GCC unroll 8
    for (int i = 0; i < kMR256; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
    for (int64_t p = 0; p < k; ++p, a += kMR256, b += rs_b) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 8
        for (int i = 0; i < kMR256; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            lo[i] = _mm256_fmadd_ps(ai, b0, lo[i]);
            hi[i] = _mm256_fmadd_ps(ai, b1, hi[i]);
        }
    }
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 8
    for (int i = 0; i < kMR256; ++i, c += rs_c) {
        __m256 r0 = _mm256_mul_ps(va, lo[i]), r1 = _mm256_mul_ps(va, hi[i]);
        if (beta != 0.0f) {
            r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), r0);
            r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8), r1);
        }
        _mm256_storeu_ps(c, r0);
        _mm256_storeu_ps(c + 8, r1);
    }
}

// Block sizes: the kc x nr B sliver stays in L1 or L2, the mc x kc A block in L2, the kc x nc
// B panel in L3. AVX-512's were tuned with RUDRA_SGEMM_BLOCKS on a Sapphire Rapids core
// (kc 384 beat 128, 192 and 256 on 2048^3).
constexpr MicroKernel kAvx512{"avx512", "AVX-512F", kMR512, kNR512, 240, 384, 4096, run_avx512};
constexpr MicroKernel kAvx2{"avx2", "AVX2 and FMA", kMR256, kNR256, 144, 256, 4096, run_avx2};

}  // namespace

const MicroKernel* avx512_micro_kernel() { return &kAvx512; }
const MicroKernel* avx2_micro_kernel() { return &kAvx2; }

}  // namespace rudra::kernels

#else

namespace rudra::kernels {
const MicroKernel* avx512_micro_kernel() { return nullptr; }
const MicroKernel* avx2_micro_kernel() { return nullptr; }
}  // namespace rudra::kernels

#endif
