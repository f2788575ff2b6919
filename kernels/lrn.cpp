#include "kernels/lrn.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rudra::kernels {
namespace {

// out[c, h, w] = sum of in[c', h', w'] over the LRN window around (c, h, w), for one image.
void window_sum(const float* in, const LrnGeometry& g, float* out) {
    const int plane = g.height * g.width;
    const int before = (g.local_size - 1) / 2, after = g.local_size - 1 - before;
    if (g.across_channels) {
        for (int c = 0; c < g.channels; ++c) {
            float* o = out + static_cast<long>(c) * plane;
            std::fill(o, o + plane, 0.0f);
            for (int cc = std::max(0, c - before); cc <= std::min(g.channels - 1, c + after); ++cc) {
                const float* i = in + static_cast<long>(cc) * plane;
                for (int p = 0; p < plane; ++p) o[p] += i[p];
            }
        }
        return;
    }
    // Within a channel the window is a box: sums along each row, then of those along columns,
    // each a few whole-row vector adds instead of local_size^2 bounded reads per pixel.
    std::vector<float> rows(static_cast<size_t>(plane));
    for (int c = 0; c < g.channels; ++c) {
        const float* i = in + static_cast<long>(c) * plane;
        float* o = out + static_cast<long>(c) * plane;
        for (int h = 0; h < g.height; ++h) {
            const float* src = i + static_cast<long>(h) * g.width;
            float* r = rows.data() + static_cast<long>(h) * g.width;
            const int lo = std::min(before, g.width), hi = std::max(lo, g.width - after);
            std::fill(r, r + g.width, 0.0f);
            for (int d = -before; d <= after; ++d)  // interior: every tap inside the row
                for (int w = lo; w < hi; ++w) r[w] += src[w + d];
            for (int w = 0; w < g.width; ++w) {  // the edges, with clipped windows
                if (w == lo) w = std::max(hi, lo);
                if (w >= g.width) break;
                for (int ww = std::max(0, w - before); ww <= std::min(g.width - 1, w + after); ++ww) r[w] += src[ww];
            }
        }
        for (int h = 0; h < g.height; ++h) {
            float* dst = o + static_cast<long>(h) * g.width;
            std::fill(dst, dst + g.width, 0.0f);
            for (int hh = std::max(0, h - before); hh <= std::min(g.height - 1, h + after); ++hh) {
                const float* r = rows.data() + static_cast<long>(hh) * g.width;
                for (int w = 0; w < g.width; ++w) dst[w] += r[w];
            }
        }
    }
}

float norm_coefficient(const LrnGeometry& g) {
    return g.across_channels ? g.alpha / g.local_size
                             : g.alpha / static_cast<float>(g.local_size * g.local_size);
}

float offset(const LrnGeometry& g) { return g.across_channels ? g.k : 1.0f; }

// s^-beta. beta = 0.75 (every published net) is 1/sqrt(s) * sqrt(1/sqrt(s)), far cheaper than pow.
inline float inverse_power(float s, float beta) {
    if (beta == 0.75f) {
        const float r = 1.0f / std::sqrt(s);
        return r * std::sqrt(r);
    }
    return std::pow(s, -beta);
}

}  // namespace

void lrn_forward(const float* x, const LrnGeometry& g, int num, float* y, float* scale) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float a = norm_coefficient(g), k = offset(g);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const float* xn = x + n * count;
        float* yn = y + n * count;
        float* sn = scale + n * count;
        for (long i = 0; i < count; ++i) yn[i] = xn[i] * xn[i];  // squares, staged in y
        window_sum(yn, g, sn);
        for (long i = 0; i < count; ++i) {
            sn[i] = k + a * sn[i];
            yn[i] = xn[i] * inverse_power(sn[i], g.beta);
        }
    }
}

void lrn_backward(const float* x, const float* y, const float* scale, const float* dy,
                  const LrnGeometry& g, int num, float* dx, float* work) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float coeff = 2.0f * norm_coefficient(g) * g.beta;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const long o = n * count;
        float* ratio = work + o;
        for (long i = 0; i < count; ++i) ratio[i] = dy[o + i] * y[o + i] / scale[o + i];
        window_sum(ratio, g, dx + o);  // the window is symmetric, so the adjoint is the same sum
        for (long i = 0; i < count; ++i)
            dx[o + i] = dy[o + i] * inverse_power(scale[o + i], g.beta) - coeff * x[o + i] * dx[o + i];
    }
}

}  // namespace rudra::kernels
