#include "kernels/lrn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/lrn_narrow.h"

namespace rudra::kernels {
namespace {

// ACROSS_CHANNELS: out[c, h, w] = sum of in[c', h, w] over the `size` channels around c, for one image.
void channel_window_sum(const float* in, const LrnGeometry& g, float* out) {
    const int plane = g.height * g.width;
    const int before = (g.local_size - 1) / 2, after = g.local_size - 1 - before;
    for (int c = 0; c < g.channels; ++c) {
        float* o = out + static_cast<long>(c) * plane;
        std::fill(o, o + plane, 0.0f);
        for (int cc = std::max(0, c - before); cc <= std::min(g.channels - 1, c + after); ++cc) {
            const float* i = in + static_cast<long>(cc) * plane;
            for (int p = 0; p < plane; ++p) o[p] += i[p];
        }
    }
}

// WITHIN_CHANNEL: size x size box sums over one plane, which the caller writes into the
// interior of a zero-bordered plane. Sums along rows, then of those along columns, are long
// loops over the flat padded plane with no clipped windows to treat apart (the columns of the
// border are computed and dropped): rows of small images are a vector or two, so loops per
// row would spend their time in loop overhead. The buffers are the calling thread's, so a
// layer's planes are worked on one at a time in L1.
class BoxSums {
public:
    explicit BoxSums(const LrnGeometry& g)
        : size_(g.local_size), before_((g.local_size - 1) / 2), h_(g.height),
          wp_(g.width + g.local_size - 1), padded_(static_cast<long>(g.height + g.local_size - 1) * wp_) {
        thread_local std::vector<float> buffer;  // padded plane, row sums, column sums
        if (buffer.size() < static_cast<size_t>(3 * padded_)) buffer.resize(static_cast<size_t>(3 * padded_));
        pad_ = buffer.data();
        rows_ = pad_ + padded_;
        sums_ = rows_ + padded_;
        std::fill(pad_, pad_ + padded_, 0.0f);  // the border stays zero: only the interior is written
    }
    float* interior_row(int h) { return pad_ + static_cast<long>(h + before_) * wp_ + before_; }
    // rows[i] = pad[i] + ... + pad[i + size - 1]; sums[j] = rows[j] + ... + rows[j + (size - 1) wp].
    // The last size - 1 row sums, which no kept column needs, keep whatever they held.
    void compute() {
        const long row_sums = padded_ - (size_ - 1), col_sums = static_cast<long>(h_) * wp_;
        // Tap by tap, each a long vector loop (a loop over taps inside would not vectorise).
        for (int d = 0; d < size_; ++d)
            for (long p = 0; p < row_sums; ++p) rows_[p] = (d == 0 ? 0.0f : rows_[p]) + pad_[p + d];
        for (int d = 0; d < size_; ++d)
            for (long p = 0; p < col_sums; ++p)
                sums_[p] = (d == 0 ? 0.0f : sums_[p]) + rows_[p + static_cast<long>(d) * wp_];
    }
    const float* sums_row(int h) const { return sums_ + static_cast<long>(h) * wp_; }

private:
    int size_, before_, h_, wp_;
    long padded_;
    float *pad_, *rows_, *sums_;
};

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
    if (g.across_channels) {
        for (long i = 0; i < count; ++i) yn[i] = xn[i] * xn[i];  // squares, staged in y
        channel_window_sum(yn, g, sn);
        for (long i = 0; i < count; ++i) {
            sn[i] = k + a * sn[i];
            yn[i] = xn[i] * inverse_power<kThreeQuarters>(sn[i], g.beta);
        }
        return;
    }
    BoxSums box(g);
    const int H = g.height, W = g.width;
    for (long c0 = 0; c0 < count; c0 += static_cast<long>(H) * W) {  // one channel's plane
        for (int h = 0; h < H; ++h) {  // squares into the box's plane
            const float* __restrict xr = xn + c0 + static_cast<long>(h) * W;
            float* __restrict row = box.interior_row(h);
            for (int w = 0; w < W; ++w) row[w] = xr[w] * xr[w];
        }
        box.compute();
        for (int h = 0; h < H; ++h) {
            const long o = c0 + static_cast<long>(h) * W;
            const float* __restrict s = box.sums_row(h);
            for (int w = 0; w < W; ++w) {
                sn[o + w] = k + a * s[w];
                yn[o + w] = xn[o + w] * inverse_power<kThreeQuarters>(sn[o + w], g.beta);
            }
        }
    }
}

template <bool kThreeQuarters>
void lrn_backward_image(const float* x, const float* y, const float* scale, const float* dy, const LrnGeometry& g,
                        long count, float coeff, float* dx, float* ratio) {
    // The window is symmetric, so the adjoint of its sum is the same sum.
    if (g.across_channels) {
        for (long i = 0; i < count; ++i) ratio[i] = dy[i] * y[i] / scale[i];
        channel_window_sum(ratio, g, dx);
        for (long i = 0; i < count; ++i)
            dx[i] = dy[i] * inverse_power<kThreeQuarters>(scale[i], g.beta) - coeff * x[i] * dx[i];
        return;
    }
    BoxSums box(g);
    const int H = g.height, W = g.width;
    for (long c0 = 0; c0 < count; c0 += static_cast<long>(H) * W) {
        for (int h = 0; h < H; ++h) {
            const long o = c0 + static_cast<long>(h) * W;
            float* __restrict row = box.interior_row(h);
            for (int w = 0; w < W; ++w) row[w] = dy[o + w] * y[o + w] / scale[o + w];
        }
        box.compute();
        for (int h = 0; h < H; ++h) {
            const long o = c0 + static_cast<long>(h) * W;
            const float* __restrict s = box.sums_row(h);
            for (int w = 0; w < W; ++w)
                dx[o + w] = dy[o + w] * inverse_power<kThreeQuarters>(scale[o + w], g.beta) - coeff * x[o + w] * s[w];
        }
    }
}

}  // namespace

void lrn_forward(const float* x, const LrnGeometry& g, int num, float* y, float* scale) {
    if (lrn_forward_narrow(x, g, num, y)) return;
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
    if (lrn_backward_narrow(x, dy, g, num, dx)) return;
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
