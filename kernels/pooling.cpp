#include "kernels/pooling.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/pool_narrow.h"
#include "kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rudra::kernels {

int caffe_pooled_size(int in, int kernel, int pad, int stride) {
    int span = in + 2 * pad - kernel;
    int out = (span + stride - 1) / stride + 1;  // ceil for span >= 0
    if (span < 0) out = 1;
    if (pad > 0 && (out - 1) * stride >= in + pad) --out;
    return out;
}

int PoolGeometry::pooled_h() const { return caffe_pooled_size(height, kernel_h, pad_h, stride_h); }
int PoolGeometry::pooled_w() const { return caffe_pooled_size(width, kernel_w, pad_w, stride_w); }

namespace {

struct Window {
    int h0, h1, w0, w1;  // clipped to the image
    int divisor;         // clipped to the padded image (average pooling)
};

inline Window window(const PoolGeometry& g, int py, int px) {
    int h0 = py * g.stride_h - g.pad_h, w0 = px * g.stride_w - g.pad_w;
    int h1 = std::min(h0 + g.kernel_h, g.height + g.pad_h);
    int w1 = std::min(w0 + g.kernel_w, g.width + g.pad_w);
    int divisor = (h1 - h0) * (w1 - w0);
    h0 = std::max(h0, 0);
    w0 = std::max(w0, 0);
    h1 = std::min(h1, g.height);
    w1 = std::min(w1, g.width);
    return {h0, h1, w0, w1, divisor};
}

// Output columns [px0, px1) and rows [py0, py1) whose windows lie wholly inside the image.
struct Interior {
    int py0, py1, px0, px1;
};

Interior interior(const PoolGeometry& g) {
    auto range = [](int in, int kernel, int pad, int stride, int out, int& lo, int& hi) {
        lo = (pad + stride - 1) / stride;                                   // first start >= 0
        hi = in - kernel + pad >= 0 ? (in - kernel + pad) / stride + 1 : 0;  // last start + kernel <= in
        hi = std::min(hi, out);
        lo = std::min(lo, hi);
    };
    Interior r{};
    range(g.height, g.kernel_h, g.pad_h, g.stride_h, g.pooled_h(), r.py0, r.py1);
    range(g.width, g.kernel_w, g.pad_w, g.stride_w, g.pooled_w(), r.px0, r.px1);
    return r;
}

// One output with its window clipped to the image (edges, padding).
inline void max_window(const float* xp, const PoolGeometry& g, int py, int px, float& out, int32_t& arg) {
    Window w = window(g, py, px);
    if (w.h0 >= w.h1 || w.w0 >= w.w1) {  // a window wholly in the padding
        out = 0.0f;
        arg = -1;
        return;
    }
    int32_t where = w.h0 * g.width + w.w0;
    float best = xp[where];
    for (int h = w.h0; h < w.h1; ++h)
        for (int c = w.w0; c < w.w1; ++c) {
            const int32_t i = h * g.width + c;
            if (xp[i] > best) {
                best = xp[i];
                where = i;
            }
        }
    out = best;
    arg = where;
}

// The whole-window columns [px0, px1) of one output row: one tap at a time across the row, as
// selects the compiler vectorises (maxima are unpredictable, so branches would mispredict). The
// first strict maximum in scan order wins, as in Caffe. SW: the column stride when it is a
// compile-time 1 (the loads then vectorise), 0 for any other.
template <int SW>
void max_row_taps(const float* xp, const PoolGeometry& g, int h0, int px0, int px1, float* __restrict best,
                  int32_t* __restrict arg) {
    const int sw = SW ? SW : g.stride_w;
    for (int kh = 0; kh < g.kernel_h; ++kh)
        for (int kw = 0; kw < g.kernel_w; ++kw) {
            const int32_t base = (h0 + kh) * g.width + kw - g.pad_w;
            const bool first = kh == 0 && kw == 0;
            for (int px = px0; px < px1; ++px) {
                const int32_t i = base + px * sw;
                const float v = xp[i], b = best[px];
                const int32_t a = arg[px];
                const bool take = first || v > b;
                best[px] = take ? v : b;
                arg[px] = take ? i : a;
            }
        }
}

#if defined(__x86_64__)
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
__attribute__((target("avx512f"))) inline Tap<SW> make_tap(const PoolGeometry& g, int px, __mmask16 m, int kw) {
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
__attribute__((target("avx512f"))) inline __m512 load_tap(const Tap<SW>& t, const float* row) {
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
__attribute__((target("avx512f"))) void max_row_avx512(const float* xp, const PoolGeometry& g, int py, int pw,
                                                         float* best, int32_t* arg) {
    const Window rows = window(g, py, 0);  // its rows [h0, h1) are those of the whole output row
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
__attribute__((target("avx512f"))) inline __m512 avg_divisors(const PoolGeometry& g, int py, int px, int sw) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const int h0 = py * g.stride_h - g.pad_h;
    const int dh = std::min(h0 + g.kernel_h, g.height + g.pad_h) - h0;
    const __m512i w0 = _mm512_add_epi32(_mm512_set1_epi32(px * sw - g.pad_w), _mm512_mullo_epi32(iota, _mm512_set1_epi32(sw)));
    const __m512i w1 = _mm512_min_epi32(_mm512_add_epi32(w0, _mm512_set1_epi32(g.kernel_w)),
                                        _mm512_set1_epi32(g.width + g.pad_w));
    return _mm512_cvtepi32_ps(_mm512_mullo_epi32(_mm512_sub_epi32(w1, w0), _mm512_set1_epi32(dh)));
}

template <int SW>
__attribute__((target("avx512f"))) void avg_row_avx512(const float* xp, const PoolGeometry& g, int py, int pw,
                                                         float* out) {
    const Window rows = window(g, py, 0);  // its rows [h0, h1) are those of the whole output row
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
#endif

// One average over a window clipped to the image, divided by its size in the padded image.
inline float avg_window(const float* xp, const PoolGeometry& g, int py, int px) {
    Window w = window(g, py, px);
    float sum = 0.0f;
    for (int h = w.h0; h < w.h1; ++h)
        for (int c = w.w0; c < w.w1; ++c) sum += xp[h * g.width + c];
    return sum / w.divisor;
}

// Whether this CPU and geometry take the AVX-512 rows.
bool vector_rows(const PoolGeometry& g) {
#if defined(__x86_64__)
    return cpu_has_avx512f() && (g.stride_w == 1 || g.stride_w == 2) && g.kernel_w <= kMaxVectorKernelW;
#else
    (void)g;
    return false;
#endif
}

// The whole-window columns [px0, px1) of one output row, portable.
void max_row(const float* xp, const PoolGeometry& g, int h0, int px0, int px1, float* best, int32_t* arg) {
    if (g.stride_w == 1) return max_row_taps<1>(xp, g, h0, px0, px1, best, arg);
    max_row_taps<0>(xp, g, h0, px0, px1, best, arg);
}

}  // namespace

void max_pool_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    if (max_pool_forward_narrow(x, g, planes, y, argmax)) return;
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
    const Interior in = interior(g);
    const bool vector = vector_rows(g);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        const float* xp = x + p * in_plane;
        for (int py = 0; py < ph; ++py) {
            float* best = y + p * out_plane + static_cast<long>(py) * pw;
            int32_t* arg = argmax + p * out_plane + static_cast<long>(py) * pw;
#if defined(__x86_64__)
            if (vector) {
                if (g.stride_w == 2)
                    max_row_avx512<2>(xp, g, py, pw, best, arg);
                else
                    max_row_avx512<1>(xp, g, py, pw, best, arg);
                continue;
            }
#endif
            const bool inside = py >= in.py0 && py < in.py1;
            for (int px = 0; px < pw; ++px)
                if (!inside || px < in.px0 || px >= in.px1) max_window(xp, g, py, px, best[px], arg[px]);
            if (inside) max_row(xp, g, py * g.stride_h - g.pad_h, in.px0, in.px1, best, arg);
        }
    }
}

void max_pool_backward(const float* dy, const int32_t* argmax, const PoolGeometry& g, long planes,
                       float* dx) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        float* dxp = dx + p * in_plane;
        std::memset(dxp, 0, sizeof(float) * in_plane);
        const float* dyp = dy + p * out_plane;
        const int32_t* ap = argmax + p * out_plane;
        for (long i = 0; i < out_plane; ++i)
            if (ap[i] >= 0) dxp[ap[i]] += dyp[i];
    }
}

void avg_pool_forward(const float* x, const PoolGeometry& g, long planes, float* y) {
    if (avg_pool_forward_narrow(x, g, planes, y)) return;
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
    const bool vector = vector_rows(g);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        const float* xp = x + p * in_plane;
        for (int py = 0; py < ph; ++py) {
            float* out = y + p * out_plane + static_cast<long>(py) * pw;
#if defined(__x86_64__)
            if (vector) {
                if (g.stride_w == 2)
                    avg_row_avx512<2>(xp, g, py, pw, out);
                else
                    avg_row_avx512<1>(xp, g, py, pw, out);
                continue;
            }
#endif
            for (int px = 0; px < pw; ++px) out[px] = avg_window(xp, g, py, px);
        }
    }
}

// Each output row's shares (dy / divisor) are first spread along one input row, then that row is
// added to every input row of the windows: adding tap by tap into dx would store and reload
// overlapping addresses, which stalls store forwarding.
void avg_pool_backward(const float* dy, const PoolGeometry& g, long planes, float* dx) {
    if (avg_pool_backward_narrow(dy, g, planes, dx)) return;
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
#pragma omp parallel
    {
        std::vector<float> spread(static_cast<size_t>(g.width));
#pragma omp for schedule(static)
        for (long p = 0; p < planes; ++p) {
            float* dxp = dx + p * in_plane;
            std::memset(dxp, 0, sizeof(float) * in_plane);
            const float* dyp = dy + p * out_plane;
            for (int py = 0; py < ph; ++py) {
                std::fill(spread.begin(), spread.end(), 0.0f);
                Window w{};
                for (int px = 0; px < pw; ++px) {
                    w = window(g, py, px);
                    const float share = dyp[py * pw + px] / static_cast<float>(w.divisor);
                    for (int c = w.w0; c < w.w1; ++c) spread[c] += share;
                }
                for (int h = w.h0; h < w.h1; ++h) {
                    float* __restrict row = dxp + static_cast<long>(h) * g.width;
                    for (int c = 0; c < g.width; ++c) row[c] += spread[c];
                }
            }
        }
    }
}

}  // namespace rudra::kernels
