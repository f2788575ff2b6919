#include "kernels/transpose.h"

#include <algorithm>

#include "kernels/isa_target.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rudra::kernels {
namespace {

void transpose_portable(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    // 16 x 16 tiles: the 16 source rows and 16 destination rows of a tile stay in L1.
    constexpr int kTile = 16;
    for (int r0 = 0; r0 < rows; r0 += kTile)
        for (int c0 = 0; c0 < cols; c0 += kTile) {
            const int r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
            for (int c = c0; c < c1; ++c)
                for (int r = r0; r < r1; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
        }
}

#if defined(__x86_64__)

// GCC 12's headers build these shuffles from _mm512_undefined_ps(), which -Wuninitialized
// reports inside an AVX-512 target function; the values are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// One 16 x 16 tile in four rounds of shuffles (4-wide interleaves, then 128-bit lanes).
// A partial tile (rows or cols < 16) loads its rows under a column mask and zeros the rest,
// and stores its `cols` destination rows under a mask of `rows` lanes.
template <bool kPartial>
RUDRA_TARGET_AVX512 void tile16(const float* src, int64_t ld_src, float* dst, int64_t ld_dst,
                                int rows = 16, int cols = 16) {
    __m512 r[16], t[16];
    const __mmask16 col_mask = static_cast<__mmask16>((1u << cols) - 1), row_mask = static_cast<__mmask16>((1u << rows) - 1);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
        r[i] = kPartial ? (i < rows ? _mm512_maskz_loadu_ps(col_mask, src + i * ld_src) : _mm512_setzero_ps())
                        : _mm512_loadu_ps(src + i * ld_src);
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
    __m512 out[16];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        out[j + 0] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        out[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
        out[j + 4] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0x88);
        out[j + 12] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0xdd);
    }
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
        if constexpr (kPartial) {
            if (j < cols) _mm512_mask_storeu_ps(dst + j * ld_dst, row_mask, out[j]);
        } else {
            _mm512_storeu_ps(dst + j * ld_dst, out[j]);
        }
    }
}

void transpose_avx512(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    for (int r = 0; r < rows; r += 16)
        for (int c = 0; c < cols; c += 16) {
            const float* s = src + r * ld_src + c;
            float* d = dst + c * ld_dst + r;
            if (r + 16 <= rows && c + 16 <= cols)
                tile16<false>(s, ld_src, d, ld_dst);
            else
                tile16<true>(s, ld_src, d, ld_dst, std::min(16, rows - r), std::min(16, cols - c));
        }
}
#pragma GCC diagnostic pop

// One 8 x 8 tile: 4-wide interleaves, then 128-bit lanes. A partial tile (kPartial) reads only
// its first `rows` source rows and writes only the first `rows` floats of each destination row:
// the packing of the AVX2 SGEMM's 6-row panels is such a tile, and element by element it took a
// noticeable share of a small product's time.
template <bool kPartial>
RUDRA_TARGET_AVX2 void tile8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int rows = 8) {
    __m256 r[8], t[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
        r[i] = !kPartial || i < rows ? _mm256_loadu_ps(src + i * ld_src) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // r[4h + j], 128-bit lane L: column 4L + j of rows 4h .. 4h + 3.
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
        r[4 * h + 0] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * h + 1] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        const __m256 low = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20);
        const __m256 high = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
        if constexpr (kPartial) {
            _mm256_maskstore_ps(dst + j * ld_dst, lanes, low);
            _mm256_maskstore_ps(dst + (j + 4) * ld_dst, lanes, high);
        } else {
            _mm256_storeu_ps(dst + j * ld_dst, low);
            _mm256_storeu_ps(dst + (j + 4) * ld_dst, high);
        }
    }
}

// 8 x 8 tiles in registers, the last rows (fewer than 8) as partial tiles; the last columns
// (fewer than 8) element by element.
void transpose_avx2(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    const int rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
    for (int r = 0; r < rows8; r += 8)
        for (int c = 0; c < cols8; c += 8) tile8<false>(src + r * ld_src + c, ld_src, dst + c * ld_dst + r, ld_dst);
    if (rows8 < rows)
        for (int c = 0; c < cols8; c += 8)
            tile8<true>(src + rows8 * ld_src + c, ld_src, dst + c * ld_dst + rows8, ld_dst, rows - rows8);
    for (int r = 0; r < rows; ++r)
        for (int c = cols8; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}

#endif

struct AnyShape {};
#if defined(__x86_64__)
constexpr TransposeFn kAvx512 = transpose_avx512, kAvx2 = transpose_avx2;
#else
constexpr TransposeFn kAvx512 = nullptr, kAvx2 = nullptr;
#endif
const Impl<AnyShape, TransposeFn> kTransposes[] = {
    {"avx512_16x16", Isa::Avx512, kAvx512},
    {"avx2_8x8", Isa::Avx2, kAvx2},
    {"portable", Isa::Reference, transpose_portable},
};

}  // namespace

TransposeFn choose_transpose(const IsaGate& gate, ImplChoice* choice) {
    ImplChoice local;
    return choose_impl(kTransposes, AnyShape{}, gate, choice ? *choice : local);
}

std::string transpose_impls(const IsaGate& gate) { return describe_impls(kTransposes, gate); }

void transpose(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    static const TransposeFn chosen = choose_transpose(isa_gate());
    chosen(src, rows, cols, ld_src, dst, ld_dst);
}

}  // namespace rudra::kernels
