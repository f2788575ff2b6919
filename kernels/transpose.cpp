#include "kernels/transpose.h"

#include <algorithm>

#include "kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rudra::kernels {

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
namespace {

// GCC 12's headers build these shuffles from _mm512_undefined_ps(), which -Wuninitialized
// reports inside a target("avx512f") function; the values are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// One 16 x 16 tile in four rounds of shuffles (4-wide interleaves, then 128-bit lanes).
__attribute__((target("avx512f"))) void tile16(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
    __m512 r[16], t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ld_src);
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
        _mm512_storeu_ps(dst + (j + 0) * ld_dst, _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88));
        _mm512_storeu_ps(dst + (j + 8) * ld_dst, _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd));
        _mm512_storeu_ps(dst + (j + 4) * ld_dst, _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0x88));
        _mm512_storeu_ps(dst + (j + 12) * ld_dst, _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0xdd));
    }
}

void transpose_avx512(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    const int rows16 = rows / 16 * 16, cols16 = cols / 16 * 16;
    for (int r = 0; r < rows16; r += 16)
        for (int c = 0; c < cols16; c += 16) tile16(src + r * ld_src + c, ld_src, dst + c * ld_dst + r, ld_dst);
    if (cols16 < cols) transpose_portable(src + cols16, rows, cols - cols16, ld_src, dst + cols16 * ld_dst, ld_dst);
    if (rows16 < rows)
        transpose_portable(src + rows16 * ld_src, rows - rows16, cols16, ld_src, dst + rows16, ld_dst);
}
#pragma GCC diagnostic pop

}  // namespace
#endif

void transpose(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
#if defined(__x86_64__)
    if (cpu_has_avx512f()) {
        transpose_avx512(src, rows, cols, ld_src, dst, ld_dst);
        return;
    }
#endif
    transpose_portable(src, rows, cols, ld_src, dst, ld_dst);
}

}  // namespace rudra::kernels
