// LRN's portable passes, written once and compiled for each level (kernels/isa_target.h's
// Compiled: portable, portable_avx2, portable_avx512), and LrnKernel's list.
#include "kernels/lrn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/isa_target.h"

namespace rudra::kernels {
namespace {

// ACROSS_CHANNELS: out[c, h, w] = sum of in[c', h, w] over the `size` channels around c, for one image.
RUDRA_INLINE void channel_window_sum(const float* in, const LrnGeometry& g, float* out) {
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
    RUDRA_INLINE float* interior_row(int h) { return pad_ + static_cast<long>(h + before_) * wp_ + before_; }
    // rows[i] = pad[i] + ... + pad[i + size - 1]; sums[j] = rows[j] + ... + rows[j + (size - 1) wp].
    // The last size - 1 row sums, which no kept column needs, keep whatever they held.
    RUDRA_INLINE void compute() {
        const long row_sums = padded_ - (size_ - 1), col_sums = static_cast<long>(h_) * wp_;
        // Tap by tap, each a long vector loop (a loop over taps inside would not vectorise).
        for (int d = 0; d < size_; ++d)
            for (long p = 0; p < row_sums; ++p) rows_[p] = (d == 0 ? 0.0f : rows_[p]) + pad_[p + d];
        for (int d = 0; d < size_; ++d)
            for (long p = 0; p < col_sums; ++p)
                sums_[p] = (d == 0 ? 0.0f : sums_[p]) + rows_[p + static_cast<long>(d) * wp_];
    }
    RUDRA_INLINE const float* sums_row(int h) const { return sums_ + static_cast<long>(h) * wp_; }

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
RUDRA_INLINE float inverse_power(float s, float beta) {
    if constexpr (kThreeQuarters) {
        const float r = 1.0f / std::sqrt(s);
        return r * std::sqrt(r);
    } else {
        return std::pow(s, -beta);
    }
}

template <bool kThreeQuarters>
struct ForwardImage {
    RUDRA_INLINE static void run(const float* xn, const LrnGeometry& g, long count, float a, float k, float* yn,
                                 float* sn) {
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
};

template <bool kThreeQuarters>
struct BackwardImage {
    RUDRA_INLINE static void run(const float* x, const float* y, const float* scale, const float* dy,
                                 const LrnGeometry& g, long count, float coeff, float* dx, float* ratio) {
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
                    dx[o + w] =
                        dy[o + w] * inverse_power<kThreeQuarters>(scale[o + w], g.beta) - coeff * x[o + w] * s[w];
            }
        }
    }
};

template <Isa L>
void portable_forward(const float* x, const LrnGeometry& g, int num, float* y, float* scratch) {
    float* scale = scratch;
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float a = norm_coefficient(g), k = offset(g);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const long o = n * count;
        if (g.beta == 0.75f)
            Compiled<L, ForwardImage<true>>::run(x + o, g, count, a, k, y + o, scale + o);
        else
            Compiled<L, ForwardImage<false>>::run(x + o, g, count, a, k, y + o, scale + o);
    }
}

// scratch: the scale from forward, then the work (across channels only: within a channel each
// plane is worked on in a small buffer of the thread).
template <Isa L>
void portable_backward(const float* x, const float* y, const float* dy, const LrnGeometry& g, int num, float* dx,
                       float* scratch) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float* scale = scratch;
    float* work = scratch + count * num;
    const float coeff = 2.0f * norm_coefficient(g) * g.beta;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const long o = n * count;
        if (g.beta == 0.75f)
            Compiled<L, BackwardImage<true>>::run(x + o, y + o, scale + o, dy + o, g, count, coeff, dx + o, work + o);
        else
            Compiled<L, BackwardImage<false>>::run(x + o, y + o, scale + o, dy + o, g, count, coeff, dx + o, work + o);
    }
}

template <Isa L>
const LrnKernel::Passes kPortable{portable_forward<L>, portable_backward<L>, true};

// The portable passes compiled for `level`, or nullptr where this build has no such level.
const LrnKernel::Passes* portable(Isa level) {
    return for_portable_level(level, [](auto l) { return &kPortable<decltype(l)::value>; });
}

struct List {
    Impl<LrnGeometry, const LrnKernel::Passes*> entries[4];
};

const List& list() {
    static const List l{{{"avx512_narrow", Isa::Avx512, lrn::narrow_avx512(), lrn::narrow_declines},
                         {"portable_avx512", Isa::Avx512, portable(Isa::Avx512)},
                         {"portable_avx2", Isa::Avx2, portable(Isa::Avx2)},
                         {"portable", Isa::Reference, portable(Isa::Reference)}}};
    return l;
}

}  // namespace

LrnKernel::LrnKernel(const LrnGeometry& g, int num, const IsaGate& gate) : g_(g), num_(num) {
    passes_ = choose_impl(list().entries, g, gate, choice_);
    scratch_floats_ = passes_->keeps_scale ? 2 * static_cast<size_t>(num) * g.channels * g.height * g.width : 0;
}

void LrnKernel::forward(const float* x, float* y, float* scratch) const { passes_->forward(x, g_, num_, y, scratch); }

void LrnKernel::backward(const float* x, const float* y, const float* dy, float* dx, float* scratch) const {
    passes_->backward(x, y, dy, g_, num_, dx, scratch);
}

std::string LrnKernel::describe() const { return choice_.describe(); }

std::string LrnKernel::implementations(const IsaGate& gate) {
    return describe_impls(list().entries, gate);
}

}  // namespace rudra::kernels
