// x86-64 micro-kernels. Each function carries its level's target attribute (kernels/isa_target.h),
// so this file builds for the x86-64 baseline and the ISA gate decides at run time which one runs.
// Vectors run along the rows of C (NR = 2 vectors); each step broadcasts MR values of A and does
// 2 * MR FMAs on two loads of B.
#include "kernels/sgemm/micro_kernel.h"

#include "kernels/isa_target.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace rudra::kernels {
namespace {

// AVX-512: 12 x 32 tile, 24 zmm accumulators + 2 for B + 1 broadcast of the 32 registers.
constexpr int kMR512 = 12, kNR512 = 32;

RUDRA_TARGET_AVX512 void run_avx512(int64_t k, const float* a, const float* b, int64_t rs_b,
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

// Edge tiles of the AVX-512 kernel: ROWS < 12 rows and/or fewer than 32 columns, with masked
// loads and stores of C. Small-m GEMMs (inner products at mini-batch 1-8, 32 output channels)
// would otherwise compute 12 rows to keep a few.
// (GCC 12's intrinsics start some values from _mm256_undefined_pd(), which -Wuninitialized
// reports inside AVX-512 target functions; those values are never read.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
template <int ROWS>
RUDRA_TARGET_AVX512 void edge_avx512_rows(int cols, int64_t k, const float* a, const float* b,
                                          int64_t rs_b, float* c, int64_t rs_c, float alpha,
                                          float beta) {
    __m512 lo[ROWS], hi[ROWS];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; ++p, a += kMR512, b += rs_b) {
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
        }
    }
    const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols > 16 ? static_cast<__mmask16>((1u << (cols - 16)) - 1) : 0;
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i, c += rs_c) {
        __m512 r0 = _mm512_mul_ps(va, lo[i]), r1 = _mm512_mul_ps(va, hi[i]);
        if (beta != 0.0f) {
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), r1);
        }
        _mm512_mask_storeu_ps(c, m0, r0);
        _mm512_mask_storeu_ps(c + 16, m1, r1);
    }
}

// C = acc (beta 0) or C + acc (beta 1) for ROWS x 32 accumulators: the indirect and gather
// tiles' ending.
template <int ROWS>
RUDRA_TARGET_AVX512 __attribute__((always_inline)) inline void store_tile(__m512 (&lo)[ROWS], __m512 (&hi)[ROWS],
                                                                          float* c, int64_t rs_c, float beta) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i, c += rs_c) {
        if (beta != 0.0f) {
            lo[i] = _mm512_add_ps(lo[i], _mm512_loadu_ps(c));
            hi[i] = _mm512_add_ps(hi[i], _mm512_loadu_ps(c + 16));
        }
        _mm512_storeu_ps(c, lo[i]);
        _mm512_storeu_ps(c + 16, hi[i]);
    }
}

template <int ROWS, int PARTS>
RUDRA_TARGET_AVX512 void indirect_avx512_rows(int64_t k, const float* a, const float* const* bases,
                                              const int32_t* offsets, float* c, int64_t rs_c,
                                              float beta) {
    __m512 lo[ROWS], hi[ROWS];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
    const float *q0 = bases[0], *q1 = bases[1], *q2 = bases[PARTS == 4 ? 2 : 0], *q3 = bases[PARTS == 4 ? 3 : 0];
    for (int64_t p = 0; p < k; ++p, a += kMR512) {
        const int32_t o = offsets[p];
        __m512 b0, b1;
        if constexpr (PARTS == 2) {
            b0 = _mm512_loadu_ps(q0 + o);
            b1 = _mm512_loadu_ps(q1 + o);
        } else {
            // Four rows of 8 pixels: two 256-bit loads per vector.
            b0 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(q0 + o)), _mm256_loadu_ps(q1 + o), 1);
            b1 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(q2 + o)), _mm256_loadu_ps(q3 + o), 1);
        }
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
        }
    }
    store_tile<ROWS>(lo, hi, c, rs_c, beta);
}

template <int ROWS>
RUDRA_TARGET_AVX512 void gather_a_avx512_rows(int64_t k, int64_t run, const float* const* a_rows,
                                              const int32_t* run_offsets, const float* b, float* c,
                                              int64_t rs_c, float beta) {
    __m512 lo[ROWS], hi[ROWS];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t s = 0; s < k / run; ++s) {
        const float* rows[ROWS];
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) rows[i] = a_rows[i] + run_offsets[s];
        for (int64_t p = 0; p < run; ++p, b += kNR512) {
            const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 16
            for (int i = 0; i < ROWS; ++i) {
                const __m512 ai = _mm512_set1_ps(rows[i][p]);
                lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
                hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
            }
        }
    }
    store_tile<ROWS>(lo, hi, c, rs_c, beta);
}

void gather_a_avx512(int rows, int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets,
                     const float* b, float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, int64_t, const float* const*, const int32_t*, const float*, float*, int64_t, float);
    static constexpr Fn kByRows[kMR512 + 1] = {
        nullptr, gather_a_avx512_rows<1>, gather_a_avx512_rows<2>, gather_a_avx512_rows<3>,
        gather_a_avx512_rows<4>, gather_a_avx512_rows<5>, gather_a_avx512_rows<6>, gather_a_avx512_rows<7>,
        gather_a_avx512_rows<8>, gather_a_avx512_rows<9>, gather_a_avx512_rows<10>, gather_a_avx512_rows<11>,
        gather_a_avx512_rows<12>};
    kByRows[rows](k, run, a_rows, run_offsets, b, c, rs_c, beta);
}

template <int PARTS>
constexpr void (*kIndirectByRows[kMR512 + 1])(int64_t, const float*, const float* const*, const int32_t*, float*,
                                               int64_t, float) = {
    nullptr,
    indirect_avx512_rows<1, PARTS>,
    indirect_avx512_rows<2, PARTS>,
    indirect_avx512_rows<3, PARTS>,
    indirect_avx512_rows<4, PARTS>,
    indirect_avx512_rows<5, PARTS>,
    indirect_avx512_rows<6, PARTS>,
    indirect_avx512_rows<7, PARTS>,
    indirect_avx512_rows<8, PARTS>,
    indirect_avx512_rows<9, PARTS>,
    indirect_avx512_rows<10, PARTS>,
    indirect_avx512_rows<11, PARTS>,
    indirect_avx512_rows<12, PARTS>};

void indirect_avx512(int rows, int parts, int64_t k, const float* a, const float* const* bases,
                     const int32_t* offsets, float* c, int64_t rs_c, float beta) {
    (parts == 4 ? kIndirectByRows<4> : kIndirectByRows<2>)[rows](k, a, bases, offsets, c, rs_c, beta);
}
#pragma GCC diagnostic pop

void edge_avx512(int rows, int cols, int64_t k, const float* a, const float* b, int64_t rs_b, float* c,
                 int64_t rs_c, float alpha, float beta) {
    using Fn = void (*)(int, int64_t, const float*, const float*, int64_t, float*, int64_t, float, float);
    static constexpr Fn kByRows[kMR512 + 1] = {
        nullptr, edge_avx512_rows<1>, edge_avx512_rows<2>, edge_avx512_rows<3>, edge_avx512_rows<4>,
        edge_avx512_rows<5>, edge_avx512_rows<6>, edge_avx512_rows<7>, edge_avx512_rows<8>,
        edge_avx512_rows<9>, edge_avx512_rows<10>, edge_avx512_rows<11>, edge_avx512_rows<12>};
    kByRows[rows](cols, k, a, b, rs_b, c, rs_c, alpha, beta);
}

// AVX2 + FMA: 6 x 16 tile, 12 ymm accumulators + 2 for B + 1 broadcast of the 16 registers.
constexpr int kMR256 = 6, kNR256 = 16;

RUDRA_TARGET_AVX2 void run_avx2(int64_t k, const float* a, const float* b, int64_t rs_b,
                                float* c, int64_t rs_c, float alpha, float beta) {
    __m256 lo[kMR256], hi[kMR256];
#pragma GCC unroll 8
    for (int i = 0; i < kMR256; ++i) {
        lo[i] = hi[i] = _mm256_setzero_ps();
        _mm_prefetch(reinterpret_cast<const char*>(c + i * rs_c), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + i * rs_c + 15), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int64_t p = 0; p < k; ++p, a += kMR256, b += rs_b) {
        _mm_prefetch(reinterpret_cast<const char*>(a + 16 * kMR256), _MM_HINT_T0);
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

// The AVX2 kernel's indirect and gather tiles (see the AVX-512 ones): ROWS x 16, B rows in two
// pieces of 8 or packed, C = acc or C + acc.
template <int ROWS>
RUDRA_TARGET_AVX2 __attribute__((always_inline)) inline void store_tile_avx2(__m256 (&lo)[ROWS], __m256 (&hi)[ROWS],
                                                                             float* c, int64_t rs_c, float beta) {
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i, c += rs_c) {
        if (beta != 0.0f) {
            lo[i] = _mm256_add_ps(lo[i], _mm256_loadu_ps(c));
            hi[i] = _mm256_add_ps(hi[i], _mm256_loadu_ps(c + 8));
        }
        _mm256_storeu_ps(c, lo[i]);
        _mm256_storeu_ps(c + 8, hi[i]);
    }
}

template <int ROWS>
RUDRA_TARGET_AVX2 void indirect_avx2_rows(int64_t k, const float* a, const float* const* bases,
                                          const int32_t* offsets, float* c, int64_t rs_c,
                                          float beta) {
    __m256 lo[ROWS], hi[ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
    const float *q0 = bases[0], *q1 = bases[1];
    for (int64_t p = 0; p < k; ++p, a += kMR256) {
        const int32_t o = offsets[p];
        const __m256 b0 = _mm256_loadu_ps(q0 + o), b1 = _mm256_loadu_ps(q1 + o);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            lo[i] = _mm256_fmadd_ps(ai, b0, lo[i]);
            hi[i] = _mm256_fmadd_ps(ai, b1, hi[i]);
        }
    }
    store_tile_avx2<ROWS>(lo, hi, c, rs_c, beta);
}

template <int ROWS>
RUDRA_TARGET_AVX2 void gather_a_avx2_rows(int64_t k, int64_t run, const float* const* a_rows,
                                          const int32_t* run_offsets, const float* b, float* c,
                                          int64_t rs_c, float beta) {
    __m256 lo[ROWS], hi[ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
    for (int64_t s = 0; s < k / run; ++s) {
        const float* rows[ROWS];
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i) rows[i] = a_rows[i] + run_offsets[s];
        for (int64_t p = 0; p < run; ++p, b += kNR256) {
            const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 8
            for (int i = 0; i < ROWS; ++i) {
                const __m256 ai = _mm256_broadcast_ss(rows[i] + p);
                lo[i] = _mm256_fmadd_ps(ai, b0, lo[i]);
                hi[i] = _mm256_fmadd_ps(ai, b1, hi[i]);
            }
        }
    }
    store_tile_avx2<ROWS>(lo, hi, c, rs_c, beta);
}

void indirect_avx2(int rows, int parts, int64_t k, const float* a, const float* const* bases, const int32_t* offsets,
                   float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, const float*, const float* const*, const int32_t*, float*, int64_t, float);
    static constexpr Fn kByRows[kMR256 + 1] = {nullptr,
                                              indirect_avx2_rows<1>,
                                              indirect_avx2_rows<2>,
                                              indirect_avx2_rows<3>,
                                              indirect_avx2_rows<4>,
                                              indirect_avx2_rows<5>,
                                              indirect_avx2_rows<6>};
    (void)parts;  // always 2: pieces of 8 floats
    kByRows[rows](k, a, bases, offsets, c, rs_c, beta);
}

void gather_a_avx2(int rows, int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets,
                   const float* b, float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, int64_t, const float* const*, const int32_t*, const float*, float*, int64_t, float);
    static constexpr Fn kByRows[kMR256 + 1] = {nullptr,
                                              gather_a_avx2_rows<1>,
                                              gather_a_avx2_rows<2>,
                                              gather_a_avx2_rows<3>,
                                              gather_a_avx2_rows<4>,
                                              gather_a_avx2_rows<5>,
                                              gather_a_avx2_rows<6>};
    kByRows[rows](k, run, a_rows, run_offsets, b, c, rs_c, beta);
}

// Block sizes: the kc x nr B sliver stays in L1 or L2, the mc x kc A block in L2, the kc x nc
// B panel in L3. AVX-512's were tuned with RUDRA_SGEMM_BLOCKS on a Sapphire Rapids core
// (kc 384 beat 128, 192 and 256 on 2048^3). AMD cores get longer k-blocks: blocks_for_cpu in
// sgemm_dispatch.cpp.
constexpr MicroKernel kAvx512{"avx512", Isa::Avx512, kMR512, kNR512, 240, 384, 4096, run_avx512, edge_avx512, indirect_avx512, gather_a_avx512};
constexpr MicroKernel kAvx2{"avx2", Isa::Avx2, kMR256, kNR256, 144, 256, 4096, run_avx2, nullptr, indirect_avx2, gather_a_avx2};

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
