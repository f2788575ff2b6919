// Vector traits of AVX-512 with BF16 (VDPBF16PS, VCVTNE2PS2BF16): the AVX-512 traits plus the
// BF16 pair words the BF16 GEMM works on. A pair word holds two BF16 values of consecutive k, the
// lower k in the low half; VDPBF16PS multiplies two vectors of 16 such words lane by lane and adds
// both products to 16 FP32 accumulators. Include it inside RUDRA_BEGIN_TARGET_AVX512_BF16's region.
#pragma once
#include "kernels/simd/avx512.h"

namespace rudra::kernels::simd {

struct Avx512Bf16 : Avx512 {
    static constexpr const char* kName = "avx512_bf16";

    RUDRA_SIMD I load_words(const uint32_t* p) { return _mm512_loadu_si512(p); }
    RUDRA_SIMD I broadcast_word(const uint32_t* p) { return _mm512_set1_epi32(static_cast<int>(*p)); }
    RUDRA_SIMD void store_words(uint32_t* p, I v) { _mm512_storeu_si512(p, v); }
    RUDRA_SIMD void store_words(uint32_t* p, M m, I v) { _mm512_mask_storeu_epi32(p, m, v); }

    // acc + a.low * b.low + a.high * b.high in each of the 16 lanes.
    RUDRA_SIMD F dot_pairs(F acc, I a, I b) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }

    // The pair words of 16 lanes, (bf16(low), bf16(high)), each rounded to nearest even. The
    // instruction treats denormal inputs as zero.
    RUDRA_SIMD I pair_words(F low, F high) {
        // VCVTNE2PS2BF16 puts `low`'s 16 values in the lower half, `high`'s in the upper; the
        // permutation interleaves them.
        const I both = (I)_mm512_cvtne2ps_pbh(high, low);
        const I interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        return _mm512_permutexvar_epi16(interleave, both);
    }

    // 32 consecutive values of one lane (`first` the lower 16) rounded to BF16 as its 16 pair
    // words in order, in a float vector's bits so that float shuffles (a transpose) move them.
    RUDRA_SIMD F consecutive_pairs(F first, F second) {
        return _mm512_castsi512_ps((I)_mm512_cvtne2ps_pbh(second, first));
    }

    // 16 values rounded to BF16 (nearest even), stored as 16 half words; m: which of them.
    RUDRA_SIMD void store_bf16(uint16_t* p, M m, F v) {
        _mm256_mask_storeu_epi16(p, m, (__m256i)_mm512_cvtneps_pbh(v));
    }
    // 16 BF16 values widened to FP32 (exact).
    RUDRA_SIMD F load_bf16(M m, const uint16_t* p) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    }
};

}  // namespace rudra::kernels::simd
