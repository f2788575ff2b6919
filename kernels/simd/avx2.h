// Vector traits of AVX2 and FMA (8 floats; a mask is a vector whose set lanes are all ones), for
// bodies written once over traits (kernels/simd/target_region.h). Include it inside
// RUDRA_BEGIN_TARGET_AVX2's region, as avx512.h. The operations mean what kernels/simd/avx512.h says they mean.
#pragma once
#include "kernels/simd/target_region.h"

namespace rudra::kernels::simd {

struct Avx2 {
    static constexpr int kLanes = 8;
    static constexpr const char* kName = "avx2";
    using F = __m256;
    using I = __m256i;
    using M = __m256i;

    RUDRA_SIMD F zero() { return _mm256_setzero_ps(); }
    RUDRA_SIMD F set1(float v) { return _mm256_set1_ps(v); }
    RUDRA_SIMD I set1i(int v) { return _mm256_set1_epi32(v); }
    RUDRA_SIMD I iota() { return _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0); }
    RUDRA_SIMD F add(F a, F b) { return _mm256_add_ps(a, b); }
    RUDRA_SIMD F div(F a, F b) { return _mm256_div_ps(a, b); }
    RUDRA_SIMD I addi(I a, I b) { return _mm256_add_epi32(a, b); }
    RUDRA_SIMD I subi(I a, I b) { return _mm256_sub_epi32(a, b); }
    RUDRA_SIMD I muli(I a, I b) { return _mm256_mullo_epi32(a, b); }
    RUDRA_SIMD I mini(I a, I b) { return _mm256_min_epi32(a, b); }
    RUDRA_SIMD F to_float(I a) { return _mm256_cvtepi32_ps(a); }

    RUDRA_SIMD M first(int n) { return _mm256_cmpgt_epi32(set1i(n), iota()); }
    RUDRA_SIMD M none() { return _mm256_setzero_si256(); }
    RUDRA_SIMD M both(M a, M b) { return _mm256_and_si256(a, b); }
    RUDRA_SIMD M either(M a, M b) { return _mm256_or_si256(a, b); }
    RUDRA_SIMD M only_b(M a, M b) { return _mm256_andnot_si256(a, b); }
    RUDRA_SIMD M greater(F a, F b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
    RUDRA_SIMD M in_range(I x, int lo, int hi) {
        return _mm256_and_si256(_mm256_cmpgt_epi32(x, set1i(lo - 1)), _mm256_cmpgt_epi32(set1i(hi), x));
    }

    RUDRA_SIMD F load(M m, const float* p) { return _mm256_maskload_ps(p, m); }
    RUDRA_SIMD void store(float* p, M m, F v) { _mm256_maskstore_ps(p, m, v); }
    RUDRA_SIMD void store(int32_t* p, M m, I v) { _mm256_maskstore_epi32(reinterpret_cast<int*>(p), m, v); }
    RUDRA_SIMD F select(M m, F a, F b) { return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m)); }
    RUDRA_SIMD I select(M m, I a, I b) { return _mm256_blendv_epi8(a, b, m); }
    // [l0 l2 h0 h2 | l4 l6 h4 h6] within 128-bit halves, then the 64-bit pairs put in order.
    RUDRA_SIMD F evens(F lo, F hi) {
        const F mixed = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), _MM_SHUFFLE(3, 1, 2, 0)));
    }

    RUDRA_SIMD F load(const float* p) { return _mm256_loadu_ps(p); }
    RUDRA_SIMD void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
    RUDRA_SIMD void store(float* p, F v) { _mm256_storeu_ps(p, v); }
    RUDRA_SIMD F broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    RUDRA_SIMD F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    RUDRA_SIMD F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    // Transposes the kLanes x kLanes block whose rows are r[0..7], in place: 4-wide interleaves,
    // then 128-bit lanes.
    RUDRA_SIMD void transpose(F (&r)[kLanes]) {
        F t[kLanes];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
            t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        // t[4h + j], 128-bit lane L: column 4L + j of rows 4h .. 4h + 3.
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            r[4 * h + 0] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
            r[4 * h + 1] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
            r[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
            r[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            t[j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20);
            t[j + 4] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
        }
#pragma GCC unroll 8
        for (int j = 0; j < kLanes; ++j) r[j] = t[j];
    }
        RUDRA_SIMD F load_halves(const float* lo, const float* hi) { return _mm256_loadu2_m128(hi, lo); }
};

}  // namespace rudra::kernels::simd
