// The portable pooling loops, written once and compiled for each level (kernels/isa_target.h's
// Compiled): "portable" for the baseline, "portable_avx2" and "portable_avx512" on x86-64. Each
// body works on one plane; the drivers spread the planes over the OpenMP threads.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/isa_target.h"
#include "kernels/pool_impls.h"

namespace rudra::kernels::pool {
namespace {

// Output columns [px0, px1) and rows [py0, py1) whose windows lie wholly inside the image.
struct Interior {
    int py0, py1, px0, px1;
};

Interior interior(const PoolGeometry& g) {
    auto range = [](int in, int kernel, int pad, int stride, int out, int& lo, int& hi) {
        lo = (pad + stride - 1) / stride;                                    // first start >= 0
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
RUDRA_INLINE void max_window(const float* xp, const PoolGeometry& g, int py, int px, float& out, int32_t& arg) {
    const Window w = window(g, py, px);
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
RUDRA_INLINE void max_row_taps(const float* xp, const PoolGeometry& g, int h0, int px0, int px1, float* __restrict best,
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

// One average over a window clipped to the image, divided by its size in the padded image.
RUDRA_INLINE float avg_window(const float* xp, const PoolGeometry& g, int py, int px) {
    const Window w = window(g, py, px);
    float sum = 0.0f;
    for (int h = w.h0; h < w.h1; ++h)
        for (int c = w.w0; c < w.w1; ++c) sum += xp[h * g.width + c];
    return sum / w.divisor;
}

struct MaxForwardPlane {
    RUDRA_INLINE static void run(const float* xp, const PoolGeometry& g, const Interior& in, float* yp, int32_t* ap) {
        const int ph = g.pooled_h(), pw = g.pooled_w();
        for (int py = 0; py < ph; ++py) {
            float* best = yp + static_cast<long>(py) * pw;
            int32_t* arg = ap + static_cast<long>(py) * pw;
            const bool inside = py >= in.py0 && py < in.py1;
            for (int px = 0; px < pw; ++px)
                if (!inside || px < in.px0 || px >= in.px1) max_window(xp, g, py, px, best[px], arg[px]);
            if (!inside) continue;
            const int h0 = py * g.stride_h - g.pad_h;
            if (g.stride_w == 1)
                max_row_taps<1>(xp, g, h0, in.px0, in.px1, best, arg);
            else
                max_row_taps<0>(xp, g, h0, in.px0, in.px1, best, arg);
        }
    }
};

struct MaxBackwardPlane {
    RUDRA_INLINE static void run(const float* dyp, const int32_t* ap, long in_plane, long out_plane, float* dxp) {
        std::memset(dxp, 0, sizeof(float) * in_plane);
        for (long i = 0; i < out_plane; ++i)
            if (ap[i] >= 0) dxp[ap[i]] += dyp[i];
    }
};

struct AvgForwardPlane {
    RUDRA_INLINE static void run(const float* xp, const PoolGeometry& g, float* yp) {
        const int ph = g.pooled_h(), pw = g.pooled_w();
        for (int py = 0; py < ph; ++py)
            for (int px = 0; px < pw; ++px) yp[static_cast<long>(py) * pw + px] = avg_window(xp, g, py, px);
    }
};

// Each output row's shares (dy / divisor) are first spread along one input row (`spread`, the
// width of the image), then that row is added to every input row of the windows: adding tap by
// tap into dx would store and reload overlapping addresses, which stalls store forwarding.
struct AvgBackwardPlane {
    RUDRA_INLINE static void run(const float* dyp, const PoolGeometry& g, float* dxp, float* spread) {
        const int ph = g.pooled_h(), pw = g.pooled_w();
        std::memset(dxp, 0, sizeof(float) * g.height * g.width);
        for (int py = 0; py < ph; ++py) {
            for (int c = 0; c < g.width; ++c) spread[c] = 0.0f;
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
};

template <Isa L>
void max_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
    const Interior in = interior(g);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p)
        Compiled<L, MaxForwardPlane>::run(x + p * in_plane, g, in, y + p * out_plane, argmax + p * out_plane);
}

template <Isa L>
void max_backward(const float* dy, const int32_t* argmax, const PoolGeometry& g, long planes, float* dx) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p)
        Compiled<L, MaxBackwardPlane>::run(dy + p * out_plane, argmax + p * out_plane, in_plane, out_plane,
                                           dx + p * in_plane);
}

template <Isa L>
void avg_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t*) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) Compiled<L, AvgForwardPlane>::run(x + p * in_plane, g, y + p * out_plane);
}

template <Isa L>
void avg_backward(const float* dy, const int32_t*, const PoolGeometry& g, long planes, float* dx) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel
    {
        std::vector<float> spread(static_cast<size_t>(g.width));
#pragma omp for schedule(static)
        for (long p = 0; p < planes; ++p)
            Compiled<L, AvgBackwardPlane>::run(dy + p * out_plane, g, dx + p * in_plane, spread.data());
    }
}

template <Isa L>
Kind kind() {
    Kind k;
    k.max_forward = max_forward<L>;
    k.max_backward = max_backward<L>;
    k.avg_forward = avg_forward<L>;
    k.avg_backward = avg_backward<L>;
    return k;  // takes every geometry
}

}  // namespace

Kind portable(Isa level) {
    return for_portable_level(level, [](auto l) { return kind<decltype(l)::value>(); });
}

}  // namespace rudra::kernels::pool
