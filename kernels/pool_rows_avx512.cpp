// avx512_rows: pooling a row 16 outputs at a time with AVX-512, for any row width (narrow rows
// take avx512_narrow first, kernels/pool_narrow.cpp).
#include <omp.h>

#include <algorithm>
#include <string>

#include "kernels/isa_target.h"
#include "kernels/pool_impls.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rudra::kernels::pool {

#if defined(__x86_64__)
namespace {

// AVX-512 rows for unit and double column strides (every published net's pooling): 16 outputs
// per step. Each tap's inputs are loaded contiguously (stride 2: 32 values, even lanes kept)
// under a mask of the lanes whose tap lies inside the image, so clipped windows at the borders
// take the same path as whole ones; comparisons and selects run under the same masks.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's headers start some values undefined
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kMaxVectorKernelW = 16;  // wider windows take the portable path

// Tap kw of one step of 16 outputs starting at output column px: the input column of each
// lane, the lanes inside the image, and the masks of the contiguous load(s) that fetch them.
// They depend on the column only, so each row of the window reuses them.
template <int SW>
struct Tap {
    int first;  // input column of lane 0
    __m512i cols;
    __mmask16 lanes, m_lo, m_hi;
};

template <int SW>
RUDRA_TARGET_AVX512 inline Tap<SW> make_tap(const PoolGeometry& g, int px, __mmask16 m, int kw) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i zero = _mm512_setzero_si512();
    Tap<SW> t;
    t.first = SW * px + kw - g.pad_w;
    t.cols = _mm512_add_epi32(_mm512_set1_epi32(t.first), _mm512_mullo_epi32(iota, _mm512_set1_epi32(SW)));
    t.lanes = _mm512_mask_cmplt_epi32_mask(_mm512_mask_cmpge_epi32_mask(m, t.cols, zero), t.cols,
                                           _mm512_set1_epi32(g.width));
    t.m_lo = t.lanes;
    t.m_hi = 0;
    if constexpr (SW == 2) {
        // Values first .. first+31, inside the image and below the last lane's column.
        const __m512i lo = _mm512_add_epi32(_mm512_set1_epi32(t.first), iota);
        const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(16));
        const int last = t.first + SW * (31 - __builtin_clz(static_cast<unsigned>(m) | 1u)) + 1;  // one past
        const __m512i end = _mm512_set1_epi32(std::min(last, g.width));
        t.m_lo = _mm512_mask_cmplt_epi32_mask(_mm512_cmpge_epi32_mask(lo, zero), lo, end);
        t.m_hi = _mm512_mask_cmplt_epi32_mask(_mm512_cmpge_epi32_mask(hi, zero), hi, end);
    }
    return t;
}

// The tap's values in one input row (zero outside the image).
template <int SW>
RUDRA_TARGET_AVX512 inline __m512 load_tap(const Tap<SW>& t, const float* row) {
    if constexpr (SW == 1) {
        return _mm512_maskz_loadu_ps(t.m_lo, row + t.first);
    } else {
        const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
        return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(t.m_lo, row + t.first), evens,
                                      _mm512_maskz_loadu_ps(t.m_hi, row + t.first + 16));
    }
}

// Output row py, all columns. The first tap inside the image starts each maximum, then strictly
// greater values replace it: the first maximum in scan order wins, as in Caffe. A window wholly
// in the padding gives 0 with index -1, as the scalar path does.
template <int SW>
RUDRA_TARGET_AVX512 void max_row_avx512(const float* xp, const PoolGeometry& g, int py, int pw,
                                        float* best, int32_t* arg) {
    const pool::Window rows = pool::window(g, py, 0);  // its rows [h0, h1) are those of the whole output row
    const int hs = rows.h0, he = rows.h1;
    Tap<SW> taps[kMaxVectorKernelW];
    for (int px = 0; px < pw; px += 16) {
        const int n = std::min(16, pw - px);
        const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
        for (int kw = 0; kw < g.kernel_w; ++kw) taps[kw] = make_tap<SW>(g, px, m, kw);
        __m512 b = _mm512_setzero_ps();
        __m512i a = _mm512_set1_epi32(-1);
        __mmask16 seen = 0;
        for (int h = hs; h < he; ++h) {
            const float* row = xp + static_cast<long>(h) * g.width;
            const __m512i row_start = _mm512_set1_epi32(h * g.width);
            for (int kw = 0; kw < g.kernel_w; ++kw) {
                const Tap<SW>& t = taps[kw];
                const __m512 v = load_tap<SW>(t, row);
                const __mmask16 take = _mm512_mask_cmp_ps_mask(t.lanes, v, b, _CMP_GT_OQ) | (t.lanes & ~seen);
                seen |= t.lanes;
                b = _mm512_mask_blend_ps(take, b, v);
                a = _mm512_mask_blend_epi32(take, a, _mm512_add_epi32(row_start, t.cols));
            }
        }
        _mm512_mask_storeu_ps(best + px, m, b);
        _mm512_mask_storeu_epi32(arg + px, m, a);
    }
}

// Window extents clipped to the padded image, the divisor of Caffe's average pooling, per lane.
RUDRA_TARGET_AVX512 inline __m512 avg_divisors(const PoolGeometry& g, int py, int px, int sw) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const int h0 = py * g.stride_h - g.pad_h;
    const int dh = std::min(h0 + g.kernel_h, g.height + g.pad_h) - h0;
    const __m512i w0 =
        _mm512_add_epi32(_mm512_set1_epi32(px * sw - g.pad_w), _mm512_mullo_epi32(iota, _mm512_set1_epi32(sw)));
    const __m512i w1 =
        _mm512_min_epi32(_mm512_add_epi32(w0, _mm512_set1_epi32(g.kernel_w)), _mm512_set1_epi32(g.width + g.pad_w));
    return _mm512_cvtepi32_ps(_mm512_mullo_epi32(_mm512_sub_epi32(w1, w0), _mm512_set1_epi32(dh)));
}

template <int SW>
RUDRA_TARGET_AVX512 void avg_row_avx512(const float* xp, const PoolGeometry& g, int py, int pw,
                                        float* out) {
    const pool::Window rows = pool::window(g, py, 0);  // its rows [h0, h1) are those of the whole output row
    const int hs = rows.h0, he = rows.h1;
    Tap<SW> taps[kMaxVectorKernelW];
    for (int px = 0; px < pw; px += 16) {
        const int n = std::min(16, pw - px);
        const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
        __m512 sum = _mm512_setzero_ps();
        for (int kw = 0; kw < g.kernel_w; ++kw) taps[kw] = make_tap<SW>(g, px, m, kw);
        for (int h = hs; h < he; ++h)
            for (int kw = 0; kw < g.kernel_w; ++kw)
                sum = _mm512_add_ps(sum, load_tap<SW>(taps[kw], xp + static_cast<long>(h) * g.width));
        _mm512_mask_storeu_ps(out + px, m, _mm512_div_ps(sum, avg_divisors(g, py, px, SW)));
    }
}

#pragma GCC diagnostic pop

std::string declines(const PoolGeometry& g) {
    if (g.stride_w != 1 && g.stride_w != 2) return "column stride " + std::to_string(g.stride_w) + ", not 1 or 2";
    if (g.kernel_w > kMaxVectorKernelW)
        return "kernel " + std::to_string(g.kernel_w) + " wide, above " + std::to_string(kMaxVectorKernelW);
    return "";
}

// The plane loops; each row goes to the column stride's template.
void max_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p)
        for (int py = 0; py < ph; ++py) {
            const long o = p * out_plane + static_cast<long>(py) * pw;
            if (g.stride_w == 2)
                max_row_avx512<2>(x + p * in_plane, g, py, pw, y + o, argmax + o);
            else
                max_row_avx512<1>(x + p * in_plane, g, py, pw, y + o, argmax + o);
        }
}

void avg_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t*) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p)
        for (int py = 0; py < ph; ++py) {
            float* out = y + p * out_plane + static_cast<long>(py) * pw;
            if (g.stride_w == 2)
                avg_row_avx512<2>(x + p * in_plane, g, py, pw, out);
            else
                avg_row_avx512<1>(x + p * in_plane, g, py, pw, out);
        }
}

}  // namespace

Kind rows_avx512() { return Kind{max_forward, avg_forward, nullptr, nullptr, declines}; }

#else

Kind rows_avx512() { return Kind{}; }

#endif

}  // namespace rudra::kernels::pool
