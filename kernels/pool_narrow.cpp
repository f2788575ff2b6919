// Average pooling is separable: the window's rows are summed column by column, then each output
// adds kernel_w columns of that sum. Max pooling likewise takes each column's maximum over the
// window's rows, with its index, then the maximum over kernel_w columns. With at most 32 columns the column sums are two registers,
// and every tap is one permutation of them under a mask (zero outside the image), so nothing
// goes through memory between the two steps. (Storing the sums and reloading them at shifted
// offsets had stalled on store forwarding, and was slower than summing taps directly.) The
// backward pass is the transpose: the shares dy / divisor of one output row are one register,
// each input column gathers, by the same permutations, the shares of the windows covering it,
// and each input row is the sum of those rows over the windows that hold it.
//
// Max pooling keeps Caffe's choice among equal maxima, the first in the window's row-major scan:
// down a column the first row wins, and across columns the smaller input index.
// This is avx512_narrow in PoolKernel's lists (kernels/pooling.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/isa_target.h"
#include "kernels/pool_impls.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rudra::kernels::pool {

#if defined(__x86_64__)
namespace {

constexpr int kMaxWidth = 32, kMaxOutputs = 16, kMaxKernel = 16;

// Permutation tables of one geometry, by tap kw:
//   forward: output lane px reads column SW px + kw - pad_w of the column sums [lo, hi];
//   backward: input column w (lanes of half 0: w < 16, half 1: w >= 16) takes the share of
//   output (w + pad_w - kw) / SW when that is whole and an output of the row.
struct Tables {
    int32_t fwd_idx[kMaxKernel][16];
    uint16_t fwd_mask[kMaxKernel];
    int32_t bwd_idx[kMaxKernel][2][16];
    uint16_t bwd_mask[kMaxKernel][2];
    __mmask16 lo_cols, hi_cols;  // the input columns in the row's two registers
    __mmask16 outputs;           // the outputs of a row
};

// Input rows [hs, he) of output row py's windows: never empty, as the padding is smaller than
// the kernel (declines()).
inline void window_rows(const PoolGeometry& g, int py, int& hs, int& he) {
    const int h0 = py * g.stride_h - g.pad_h;
    hs = std::max(h0, 0);
    he = std::min(h0 + g.kernel_h, g.height);
}

std::string declines(const PoolGeometry& g) {
    if (g.width > kMaxWidth) return "rows of " + std::to_string(g.width) + ", wider than " + std::to_string(kMaxWidth);
    if (g.pooled_w() > kMaxOutputs) return std::to_string(g.pooled_w()) + " outputs a row, above 16";
    if (g.kernel_w > kMaxKernel) return "kernel " + std::to_string(g.kernel_w) + " wide, above 16";
    if (g.pad_h >= g.kernel_h || g.pad_w >= g.kernel_w) return "padding not below the kernel";
    if (g.stride_w != 1 && g.stride_w != 2) return "column stride " + std::to_string(g.stride_w) + ", not 1 or 2";
    return "";
}

Tables make_tables(const PoolGeometry& g) {
    Tables t{};
    const int pw = g.pooled_w(), sw = g.stride_w, W = g.width;
    t.lo_cols = static_cast<__mmask16>(W >= 16 ? 0xFFFF : (1u << W) - 1);
    t.hi_cols = static_cast<__mmask16>(W > 16 ? (1u << (W - 16)) - 1 : 0);
    t.outputs = static_cast<__mmask16>((1u << pw) - 1);
    for (int kw = 0; kw < g.kernel_w; ++kw) {
        for (int px = 0; px < 16; ++px) {
            const int col = sw * px + kw - g.pad_w;
            const bool in = px < pw && col >= 0 && col < g.width;
            t.fwd_idx[kw][px] = in ? col : 0;
            if (in) t.fwd_mask[kw] |= static_cast<uint16_t>(1u << px);
        }
        for (int half = 0; half < 2; ++half)
            for (int lane = 0; lane < 16; ++lane) {
                const int w = 16 * half + lane, start = w + g.pad_w - kw;  // padded column of the window start
                const bool in = w < g.width && start >= 0 && start % sw == 0 && start / sw < pw;
                t.bwd_idx[kw][half][lane] = in ? start / sw : 0;
                if (in) t.bwd_mask[kw][half] |= static_cast<uint16_t>(1u << lane);
            }
    }
    return t;
}

// 1 / divisor of each output, 16 per output row: the window clipped to the padded image, as in
// Caffe (zero past the row's outputs).
std::vector<float> inverse_divisors(const PoolGeometry& g) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    std::vector<float> inv(static_cast<size_t>(ph) * 16, 0.0f);
    for (int py = 0; py < ph; ++py) {
        const int h0 = py * g.stride_h - g.pad_h;
        const int dh = std::min(h0 + g.kernel_h, g.height + g.pad_h) - h0;
        for (int px = 0; px < pw; ++px) {
            const int w0 = px * g.stride_w - g.pad_w;
            const int dw = std::min(w0 + g.kernel_w, g.width + g.pad_w) - w0;
            inv[static_cast<size_t>(py) * 16 + px] = 1.0f / static_cast<float>(dh * dw);
        }
    }
    return inv;
}

// Each pass is a plain function whose OpenMP loop calls a target("avx512f") function per plane:
// clang outlines an OpenMP region into a function of its own, without the enclosing
// function's target attribute, and then refuses the AVX-512 code in it.
RUDRA_TARGET_AVX512 void avg_forward_plane(const float* xp, const PoolGeometry& g, const Tables& t, const float* inv,
                                           float* yp) {
    const int ph = g.pooled_h(), pw = g.pooled_w(), W = g.width;
    const __mmask16 lo_cols = t.lo_cols, hi_cols = t.hi_cols, outputs = t.outputs;
    for (int py = 0; py < ph; ++py) {
        int hs, he;
        window_rows(g, py, hs, he);
        __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
        for (int h = hs; h < he; ++h) {
            lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(lo_cols, xp + static_cast<long>(h) * W));
            hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(hi_cols, xp + static_cast<long>(h) * W + 16));
        }
        __m512 sum = _mm512_setzero_ps();
        for (int kw = 0; kw < g.kernel_w; ++kw)
            sum = _mm512_add_ps(sum, _mm512_maskz_permutex2var_ps(t.fwd_mask[kw], lo, _mm512_loadu_si512(t.fwd_idx[kw]), hi));
        _mm512_mask_storeu_ps(yp + static_cast<long>(py) * pw, outputs,
                              _mm512_mul_ps(sum, _mm512_loadu_ps(inv + static_cast<size_t>(py) * 16)));
    }
}

void avg_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t*) {
    const Tables t = make_tables(g);
    const std::vector<float> inv = inverse_divisors(g);
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) avg_forward_plane(x + p * in_plane, g, t, inv.data(), y + p * out_plane);
}

RUDRA_TARGET_AVX512 void avg_backward_plane(const float* dyp, const PoolGeometry& g, const Tables& t, const float* inv,
                                            float* spread, float* dxp) {
    const int ph = g.pooled_h(), pw = g.pooled_w(), W = g.width, H = g.height;
    const __mmask16 lo_cols = t.lo_cols, hi_cols = t.hi_cols, outputs = t.outputs;
    for (int py = 0; py < ph; ++py) {
        const __m512 share = _mm512_mul_ps(_mm512_maskz_loadu_ps(outputs, dyp + static_cast<long>(py) * pw),
                                           _mm512_loadu_ps(inv + static_cast<size_t>(py) * 16));
        __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
        for (int kw = 0; kw < g.kernel_w; ++kw) {
            lo = _mm512_add_ps(lo, _mm512_maskz_permutexvar_ps(t.bwd_mask[kw][0],
                                                               _mm512_loadu_si512(t.bwd_idx[kw][0]), share));
            if (hi_cols)
                hi = _mm512_add_ps(hi, _mm512_maskz_permutexvar_ps(t.bwd_mask[kw][1],
                                                                   _mm512_loadu_si512(t.bwd_idx[kw][1]), share));
        }
        _mm512_storeu_ps(spread + static_cast<size_t>(py) * kMaxWidth, lo);
        _mm512_storeu_ps(spread + static_cast<size_t>(py) * kMaxWidth + 16, hi);
    }
    for (int h = 0; h < H; ++h) {
        // Output rows whose windows [py sh - pad_h, + kernel_h) hold row h.
        const int first = std::max(0, (h + g.pad_h - g.kernel_h + g.stride_h) / g.stride_h);
        const int last = std::min(ph - 1, (h + g.pad_h) / g.stride_h);
        __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
        for (int py = first; py <= last; ++py) {
            lo = _mm512_add_ps(lo, _mm512_loadu_ps(spread + static_cast<size_t>(py) * kMaxWidth));
            hi = _mm512_add_ps(hi, _mm512_loadu_ps(spread + static_cast<size_t>(py) * kMaxWidth + 16));
        }
        float* row = dxp + static_cast<long>(h) * W;
        _mm512_mask_storeu_ps(row, lo_cols, lo);
        _mm512_mask_storeu_ps(row + 16, hi_cols, hi);
    }
}

void avg_backward(const float* dy, const int32_t*, const PoolGeometry& g, long planes, float* dx) {
    const Tables t = make_tables(g);
    const std::vector<float> inv = inverse_divisors(g);
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel
    {
        // Each output row's spread shares, then each input row sums those of the windows
        // covering it and is written once: no memset, and no masked store read back (which
        // does not forward).
        std::vector<float> spread(static_cast<size_t>(g.pooled_h()) * kMaxWidth);
#pragma omp for schedule(static)
        for (long p = 0; p < planes; ++p)
            avg_backward_plane(dy + p * out_plane, g, t, inv.data(), spread.data(), dx + p * in_plane);
    }
}

RUDRA_TARGET_AVX512 void max_forward_plane(const float* xp, const PoolGeometry& g, const Tables& t, float* yp,
                                           int32_t* ap) {
    const int ph = g.pooled_h(), pw = g.pooled_w(), W = g.width;
    const __mmask16 lo_cols = t.lo_cols, hi_cols = t.hi_cols, outputs = t.outputs;
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int py = 0; py < ph; ++py) {
        int hs, he;
        window_rows(g, py, hs, he);
        // Column maxima over the window's rows and their input indices.
        __m512 lo = _mm512_maskz_loadu_ps(lo_cols, xp + static_cast<long>(hs) * W),
               hi = _mm512_maskz_loadu_ps(hi_cols, xp + static_cast<long>(hs) * W + 16);
        __m512i ilo = _mm512_add_epi32(iota, _mm512_set1_epi32(hs * W)),
                ihi = _mm512_add_epi32(iota, _mm512_set1_epi32(hs * W + 16));
        for (int h = hs + 1; h < he; ++h) {
            const __m512 vlo = _mm512_maskz_loadu_ps(lo_cols, xp + static_cast<long>(h) * W),
                         vhi = _mm512_maskz_loadu_ps(hi_cols, xp + static_cast<long>(h) * W + 16);
            const __mmask16 tlo = _mm512_cmp_ps_mask(vlo, lo, _CMP_GT_OQ),
                            thi = _mm512_cmp_ps_mask(vhi, hi, _CMP_GT_OQ);
            lo = _mm512_mask_blend_ps(tlo, lo, vlo);
            hi = _mm512_mask_blend_ps(thi, hi, vhi);
            ilo = _mm512_mask_blend_epi32(tlo, ilo, _mm512_add_epi32(iota, _mm512_set1_epi32(h * W)));
            ihi = _mm512_mask_blend_epi32(thi, ihi, _mm512_add_epi32(iota, _mm512_set1_epi32(h * W + 16)));
        }
        // Across the window's columns: the larger value, or the smaller index among equals.
        __m512 best = _mm512_setzero_ps();
        __m512i arg = _mm512_set1_epi32(-1);
        __mmask16 seen = 0;
        for (int kw = 0; kw < g.kernel_w; ++kw) {
            const __mmask16 in = t.fwd_mask[kw];
            const __m512i idx = _mm512_loadu_si512(t.fwd_idx[kw]);
            const __m512 v = _mm512_permutex2var_ps(lo, idx, hi);
            const __m512i i = _mm512_permutex2var_epi32(ilo, idx, ihi);
            const __mmask16 take =
                in & (~seen | _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
                      (_mm512_cmp_ps_mask(v, best, _CMP_EQ_OQ) & _mm512_cmplt_epi32_mask(i, arg)));
            seen |= in;
            best = _mm512_mask_blend_ps(take, best, v);
            arg = _mm512_mask_blend_epi32(take, arg, i);
        }
        if (outputs == 0xFFFF) {
            _mm512_storeu_ps(yp + static_cast<long>(py) * pw, best);
            _mm512_storeu_si512(ap + static_cast<long>(py) * pw, arg);
        } else {
            _mm512_mask_storeu_ps(yp + static_cast<long>(py) * pw, outputs, best);
            _mm512_mask_storeu_epi32(ap + static_cast<long>(py) * pw, outputs, arg);
        }
    }
}

void max_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    const Tables t = make_tables(g);
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p)
        max_forward_plane(x + p * in_plane, g, t, y + p * out_plane, argmax + p * out_plane);
}

}  // namespace

Kind narrow_avx512() { return Kind{max_forward, avg_forward, avg_backward, nullptr, declines}; }

#else

Kind narrow_avx512() { return Kind{}; }

#endif

}  // namespace rudra::kernels::pool
