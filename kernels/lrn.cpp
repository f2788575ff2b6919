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
    // Within a channel the window is a box: sums along rows, then of those along columns. The
    // plane is first copied into a zero-bordered one, so that both sums are long loops over the
    // flat padded plane with no clipped windows to treat apart; the columns of the padding are
    // computed and dropped. Rows of small images are a vector or two, so loops per row would
    // spend their time in loop overhead.
    const int W = g.width, H = g.height, Wp = W + before + after, Hp = H + before + after;
    const long padded = static_cast<long>(Hp) * Wp;
    thread_local std::vector<float> buffer;  // padded plane, row sums, column sums: by each thread
    if (buffer.size() < static_cast<size_t>(3 * padded)) buffer.resize(static_cast<size_t>(3 * padded));
    float* pad = buffer.data();
    float* rows = pad + padded;
    float* sums = rows + padded;
    std::fill(pad, pad + padded, 0.0f);  // the border stays zero: only the interior is copied in
    // rows[i] = pad[i] + ... + pad[i + size - 1]; sums[j] = rows[j] + ... + rows[j + (size - 1) Wp]. The
    // last size - 1 row sums, which no kept column needs, keep whatever they held.
    const long row_sums = padded - (g.local_size - 1), col_sums = static_cast<long>(H) * Wp;
    for (int c = 0; c < g.channels; ++c) {
        const float* i = in + static_cast<long>(c) * plane;
        float* o = out + static_cast<long>(c) * plane;
        for (int h = 0; h < H; ++h)
            std::copy(i + static_cast<long>(h) * W, i + static_cast<long>(h + 1) * W,
                      pad + static_cast<long>(h + before) * Wp + before);
        // Tap by tap, each a long vector loop (a loop over taps inside would not vectorise).
        for (int d = 0; d < g.local_size; ++d)
            for (long p = 0; p < row_sums; ++p) rows[p] = (d == 0 ? 0.0f : rows[p]) + pad[p + d];
        for (int d = 0; d < g.local_size; ++d)
            for (long p = 0; p < col_sums; ++p) sums[p] = (d == 0 ? 0.0f : sums[p]) + rows[p + static_cast<long>(d) * Wp];
        for (int h = 0; h < H; ++h)
            std::copy(sums + static_cast<long>(h) * Wp, sums + static_cast<long>(h) * Wp + W, o + static_cast<long>(h) * W);
    }
}

float norm_coefficient(const LrnGeometry& g) {
    return g.across_channels ? g.alpha / g.local_size
                             : g.alpha / static_cast<float>(g.local_size * g.local_size);
}

float offset(const LrnGeometry& g) { return g.across_channels ? g.k : 1.0f; }

// s^-beta. beta = 0.75 (every published net) is 1/sqrt(s) * sqrt(1/sqrt(s)), far cheaper than
// pow; the choice is a template argument so that the loops around it carry no branch and no
// call, and vectorise.
template <bool kThreeQuarters>
inline float inverse_power(float s, float beta) {
    if constexpr (kThreeQuarters) {
        const float r = 1.0f / std::sqrt(s);
        return r * std::sqrt(r);
    } else {
        return std::pow(s, -beta);
    }
}

template <bool kThreeQuarters>
void lrn_forward_image(const float* xn, const LrnGeometry& g, long count, float a, float k, float* yn, float* sn) {
    for (long i = 0; i < count; ++i) yn[i] = xn[i] * xn[i];  // squares, staged in y
    window_sum(yn, g, sn);
    for (long i = 0; i < count; ++i) {
        sn[i] = k + a * sn[i];
        yn[i] = xn[i] * inverse_power<kThreeQuarters>(sn[i], g.beta);
    }
}

template <bool kThreeQuarters>
void lrn_backward_image(const float* x, const float* y, const float* scale, const float* dy, const LrnGeometry& g,
                        long count, float coeff, float* dx, float* ratio) {
    for (long i = 0; i < count; ++i) ratio[i] = dy[i] * y[i] / scale[i];
    window_sum(ratio, g, dx);  // the window is symmetric, so the adjoint is the same sum
    for (long i = 0; i < count; ++i)
        dx[i] = dy[i] * inverse_power<kThreeQuarters>(scale[i], g.beta) - coeff * x[i] * dx[i];
}

}  // namespace

void lrn_forward(const float* x, const LrnGeometry& g, int num, float* y, float* scale) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float a = norm_coefficient(g), k = offset(g);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const long o = n * count;
        if (g.beta == 0.75f)
            lrn_forward_image<true>(x + o, g, count, a, k, y + o, scale + o);
        else
            lrn_forward_image<false>(x + o, g, count, a, k, y + o, scale + o);
    }
}

void lrn_backward(const float* x, const float* y, const float* scale, const float* dy,
                  const LrnGeometry& g, int num, float* dx, float* work) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float coeff = 2.0f * norm_coefficient(g) * g.beta;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const long o = n * count;
        if (g.beta == 0.75f)
            lrn_backward_image<true>(x + o, y + o, scale + o, dy + o, g, count, coeff, dx + o, work + o);
        else
            lrn_backward_image<false>(x + o, y + o, scale + o, dy + o, g, count, coeff, dx + o, work + o);
    }
}

}  // namespace rudra::kernels
