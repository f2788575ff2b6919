// Vector traits of AVX-512 (16 floats; masks in mask registers), for bodies written once over
// traits (kernels/simd/target_region.h). Include it inside RUDRA_BEGIN_TARGET_AVX512's region
// (target_region.h itself before the region opens, so that its standard headers stay outside).
#pragma once
#include "kernels/simd/target_region.h"

namespace rudra::kernels::simd {

struct Avx512 {
    static constexpr int kLanes = 16;
    static constexpr const char* kName = "avx512";
    using F = __m512;
    using I = __m512i;
    using M = __mmask16;

    RUDRA_SIMD F zero() { return _mm512_setzero_ps(); }
    RUDRA_SIMD F set1(float v) { return _mm512_set1_ps(v); }
    RUDRA_SIMD I set1i(int v) { return _mm512_set1_epi32(v); }
    RUDRA_SIMD I iota() { return _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0); }
    RUDRA_SIMD F add(F a, F b) { return _mm512_add_ps(a, b); }
    RUDRA_SIMD F div(F a, F b) { return _mm512_div_ps(a, b); }
    RUDRA_SIMD I addi(I a, I b) { return _mm512_add_epi32(a, b); }
    RUDRA_SIMD I subi(I a, I b) { return _mm512_sub_epi32(a, b); }
    RUDRA_SIMD I muli(I a, I b) { return _mm512_mullo_epi32(a, b); }
    RUDRA_SIMD I mini(I a, I b) { return _mm512_min_epi32(a, b); }
    RUDRA_SIMD F to_float(I a) { return _mm512_cvtepi32_ps(a); }

    // Masks: lanes [0, n); none; and, or, and-not (a clear, b set); comparisons.
    RUDRA_SIMD M first(int n) { return static_cast<M>(n <= 0 ? 0 : n >= kLanes ? 0xFFFF : (1u << n) - 1); }
    RUDRA_SIMD M none() { return 0; }
    RUDRA_SIMD M both(M a, M b) { return static_cast<M>(a & b); }
    RUDRA_SIMD M either(M a, M b) { return static_cast<M>(a | b); }
    RUDRA_SIMD M only_b(M a, M b) { return static_cast<M>(~a & b); }
    RUDRA_SIMD M greater(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
    RUDRA_SIMD M equal(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
    RUDRA_SIMD M less(I a, I b) { return _mm512_cmplt_epi32_mask(a, b); }
    // lo <= x < hi, lane by lane
    RUDRA_SIMD M in_range(I x, int lo, int hi) {
        return _mm512_mask_cmplt_epi32_mask(_mm512_cmpge_epi32_mask(x, set1i(lo)), x, set1i(hi));
    }

    // Loads and stores of the masked lanes only (a lane outside the mask is never touched, so
    // its address may lie outside the array); a masked load gives zero in the other lanes.
    RUDRA_SIMD F load(M m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
    RUDRA_SIMD void store(float* p, M m, F v) { _mm512_mask_storeu_ps(p, m, v); }
    RUDRA_SIMD void store(int32_t* p, M m, I v) { _mm512_mask_storeu_epi32(p, m, v); }
    // Lane by lane: b where m is set, else a.
    RUDRA_SIMD F select(M m, F a, F b) { return _mm512_mask_blend_ps(m, a, b); }
    RUDRA_SIMD I select(M m, I a, I b) { return _mm512_mask_blend_epi32(m, a, b); }
    // The even lanes of the 2 * kLanes values lo, hi (a stride-2 row).
    RUDRA_SIMD F evens(F lo, F hi) {
        const I idx = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
        return _mm512_permutex2var_ps(lo, idx, hi);
    }

    // Micro-kernel operations (kernels/sgemm/ukr_x86_body.h).
    RUDRA_SIMD void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
    RUDRA_SIMD F load(const float* p) { return _mm512_loadu_ps(p); }
    RUDRA_SIMD void store(float* p, F v) { _mm512_storeu_ps(p, v); }
    RUDRA_SIMD void store(int32_t* p, I v) { _mm512_storeu_si512(p, v); }
    RUDRA_SIMD F broadcast(const float* p) { return _mm512_set1_ps(*p); }
    RUDRA_SIMD F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    RUDRA_SIMD F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    RUDRA_SIMD F fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b
    RUDRA_SIMD F sqrt(F a) { return _mm512_sqrt_ps(a); }
    // Permutations by a vector of lane indices: lane w takes lane idx[w] of v (of lo, hi: of
    // their 2 * kLanes lanes); under a mask, zero where it is clear.
    RUDRA_SIMD I load_index(const int32_t* idx) { return _mm512_loadu_si512(idx); }
    RUDRA_SIMD F permute(M m, I idx, F v) { return _mm512_maskz_permutexvar_ps(m, idx, v); }
    RUDRA_SIMD F permute2(I idx, F lo, F hi) { return _mm512_permutex2var_ps(lo, idx, hi); }
    RUDRA_SIMD F permute2(M m, I idx, F lo, F hi) { return _mm512_maskz_permutex2var_ps(m, lo, idx, hi); }
    RUDRA_SIMD I permute2(I idx, I lo, I hi) { return _mm512_permutex2var_epi32(lo, idx, hi); }
    // Transposes the kLanes x kLanes block whose rows are r[0..15], in place: four rounds of
    // shuffles (4-wide interleaves, then 128-bit lanes).
    RUDRA_SIMD void transpose(F (&r)[kLanes]) {
        F t[kLanes];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        // r[4i + j], 128-bit lane L: column 4L + j of rows 4i .. 4i + 3.
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
            r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
            r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
            r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
            r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            t[j + 0] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
            t[j + 4] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
            t[j + 8] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
            t[j + 12] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            r[j + 0] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
            r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
            r[j + 4] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0x88);
            r[j + 12] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0xdd);
        }
    }

    // kLanes / 2 floats from lo, then as many from hi.
    RUDRA_SIMD F load_halves(const float* lo, const float* hi) {
        return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(lo)), _mm256_loadu_ps(hi), 1);
    }
};

}  // namespace rudra::kernels::simd
