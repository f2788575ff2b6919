// LRN's portable passes, written once and compiled for each level (kernels/isa_target.h's
// Compiled: portable, portable_avx2, portable_avx512), and LrnKernel's list.
#include "kernels/lrn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/isa_target.h"
#include "kernels/prefetch.h"

namespace rudra::kernels {
namespace {

// ACROSS_CHANNELS walks a chunk of a plane's positions through the channels with a running
// window sum, as Caffe's CPU code does: channel c + after enters the window, channel
// c - before - 1 leaves it. Each input is read once from memory and the chunks of the window's
// channels stay in L1, where summing each window afresh would pass over the image once per
// channel of the window. The pass is bound by memory, so backward computes the scale again from
// x rather than forward writing it and backward reading it back (and y too), as avx512_narrow
// does.
constexpr int kChunk = 512;  // positions of a plane at a time

struct ChannelWindow {
    int before, after;
    explicit ChannelWindow(const LrnGeometry& g) : before((g.local_size - 1) / 2), after(g.local_size - 1 - before) {}
};

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

// s^-beta and s^-beta / s; for beta 0.75, with r = 1/sqrt(s), r sqrt(r) and that times r^2:
// no second division.
template <bool kThreeQuarters>
RUDRA_INLINE void powers(float s, float beta, float& p, float& p_over_s) {
    if constexpr (kThreeQuarters) {
        const float r = 1.0f / std::sqrt(s);
        p = r * std::sqrt(r);
        p_over_s = p * r * r;
    } else {
        p = std::pow(s, -beta);
        p_over_s = p / s;
    }
}

template <bool kThreeQuarters>
struct ForwardImage {
    RUDRA_INLINE static void run(const float* xn, const LrnGeometry& g, long count, float a, float k, float* yn,
                                 float* sn) {
        if (g.across_channels) {
            const long plane = count / g.channels;
            const ChannelWindow win(g);
            alignas(64) float sum[kChunk];
            for (long p0 = 0; p0 < plane; p0 += kChunk) {
                const int n = static_cast<int>(std::min<long>(kChunk, plane - p0));
                const float* __restrict x0 = xn + p0;
                std::fill(sum, sum + n, 0.0f);
                for (int c = 0; c < std::min(win.after, g.channels); ++c) {
                    const float* __restrict xc = x0 + c * plane;
                    for (int i = 0; i < n; ++i) sum[i] += xc[i] * xc[i];
                }
                for (int c = 0; c < g.channels; ++c) {
                    // The next channel's chunk: chunks a plane apart each start a new stream, which
                    // the hardware prefetcher picks up too late.
                    if (c + win.after + 1 < g.channels) prefetch_floats(x0 + (c + win.after + 1) * plane, n);
                    if (c + win.after < g.channels) {
                        const float* __restrict in = x0 + (c + win.after) * plane;
                        for (int i = 0; i < n; ++i) sum[i] += in[i] * in[i];
                    }
                    if (c - win.before - 1 >= 0) {
                        const float* __restrict out = x0 + (c - win.before - 1) * plane;
                        for (int i = 0; i < n; ++i) sum[i] -= out[i] * out[i];
                    }
                    const long o = p0 + c * plane;
                    const float* __restrict xc = xn + o;
                    float* __restrict yc = yn + o;
                    // A running sum of squares can round below zero; the window's true sum cannot.
                    for (int i = 0; i < n; ++i)
                        yc[i] = xc[i] * inverse_power<kThreeQuarters>(k + a * std::max(sum[i], 0.0f), g.beta);
                }
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

// Backward across channels over a chunk of n positions (BackwardImage), in two loops a channel:
// lead_step brings the lead channel in (its squares enter and `out`'s leave the running sum of
// squares; its s^-beta and dy * y / s go to its ring slots and the latter into the window's
// sum); dx_step takes `rold` out of the window's sum and writes a channel's dx. Two loops of a
// few streams each: one loop over all eleven streams was the slower.
template <bool kThreeQuarters>
RUDRA_INLINE void lead_step(const float* __restrict in, const float* __restrict out, const float* __restrict xl,
                            const float* __restrict dyl, int n, float a, float k, float beta,
                            float* __restrict squares, float* __restrict pl, float* __restrict rl,
                            float* __restrict sum) {
    for (int i = 0; i < n; ++i) {
        const float sq = squares[i] + in[i] * in[i] - out[i] * out[i];
        squares[i] = sq;
        float p, p_over_s;
        powers<kThreeQuarters>(k + a * std::max(sq, 0.0f), beta, p, p_over_s);
        pl[i] = p;
        rl[i] = dyl[i] * xl[i] * p_over_s;
        sum[i] += rl[i];
    }
}

RUDRA_INLINE void dx_step(const float* __restrict rold, const float* __restrict pc, const float* __restrict xc,
                          const float* __restrict dyc, int n, float coeff, float* __restrict sum,
                          float* __restrict dxc) {
    for (int i = 0; i < n; ++i) {
        sum[i] -= rold[i];
        dxc[i] = dyc[i] * pc[i] - coeff * xc[i] * sum[i];
    }
}

template <bool kThreeQuarters>
struct BackwardImage {
    // scale: forward's (within a channel); work: 2 (local_size + 1) + 1 chunks (across channels).
    RUDRA_INLINE static void run(const float* x, const float* y, const float* scale, const float* dy,
                                 const LrnGeometry& g, long count, float coeff, float* dx, float* work) {
        // The window is symmetric, so the adjoint of its sum is the same sum: a running sum of
        // dy * y / s over the channels. A lead runs `after` channels ahead, computing each
        // channel's s^-beta and dy * y / s from x (a second running sum, of squares); both wait
        // in rings of the window's channels + 1 chunks until used. Channels outside the set read
        // a chunk of zeros.
        if (g.across_channels) {
            const long plane = count / g.channels;
            const ChannelWindow win(g);
            const int C = g.channels, ring = g.local_size + 1;
            const float a = norm_coefficient(g), k = offset(g);
            float* const power_ring = work;                             // s^-beta by channel
            float* const ratio_ring = work + static_cast<long>(ring) * kChunk;  // dy * y / s by channel
            float* const zeros = work + 2L * ring * kChunk;
            std::fill(zeros, zeros + kChunk, 0.0f);
            auto slot = [&](float* ring_base, int c) { return ring_base + static_cast<long>(c % ring) * kChunk; };
            alignas(64) float squares[kChunk], sum[kChunk];
            for (long p0 = 0; p0 < plane; p0 += kChunk) {
                const int n = static_cast<int>(std::min<long>(kChunk, plane - p0));
                auto at = [&](const float* base, int c) { return c >= 0 && c < C ? base + p0 + c * plane : zeros; };
                std::fill(squares, squares + n, 0.0f);
                std::fill(sum, sum + n, 0.0f);
                for (int c = 0; c < std::min(win.after, C); ++c) {
                    const float* __restrict in = x + p0 + static_cast<long>(c) * plane;
                    for (int i = 0; i < n; ++i) squares[i] += in[i] * in[i];
                }
                // The loops are called here, not from a lambda: a lambda is not inlined into the
                // level's entry point and would run as baseline code.
                for (int l = 0; l < std::min(win.after, C); ++l) {
                    lead_step<kThreeQuarters>(at(x, l + win.after), at(x, l - win.before - 1), at(x, l), at(dy, l), n,
                                              a, k, g.beta, squares, slot(power_ring, l), slot(ratio_ring, l), sum);
                }
                for (int c = 0; c < C; ++c) {
                    if (const int l = c + win.after; l < C)
                        lead_step<kThreeQuarters>(at(x, l + win.after), at(x, l - win.before - 1), at(x, l), at(dy, l),
                                                  n, a, k, g.beta, squares, slot(power_ring, l), slot(ratio_ring, l),
                                                  sum);
                    const float* rold = c - win.before - 1 >= 0 ? slot(ratio_ring, c - win.before - 1) : zeros;
                    dx_step(rold, slot(power_ring, c), at(x, c), at(dy, c), n, coeff, sum,
                            dx + p0 + static_cast<long>(c) * plane);
                }
            }
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

// The scale is kept (in scratch) within a channel only: across channels backward computes it again.
template <Isa L>
void portable_forward(const float* x, const LrnGeometry& g, int num, float* y, float* scratch) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float a = norm_coefficient(g), k = offset(g);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < num; ++n) {
        const long o = n * count;
        float* scale = g.across_channels ? nullptr : scratch + o;
        if (g.beta == 0.75f)
            Compiled<L, ForwardImage<true>>::run(x + o, g, count, a, k, y + o, scale);
        else
            Compiled<L, ForwardImage<false>>::run(x + o, g, count, a, k, y + o, scale);
    }
}

// Each thread's rings (across channels) are its own.
template <Isa L>
void portable_backward(const float* x, const float* y, const float* dy, const LrnGeometry& g, int num, float* dx,
                       float* scratch) {
    const long count = static_cast<long>(g.channels) * g.height * g.width;
    const float coeff = 2.0f * norm_coefficient(g) * g.beta;
#pragma omp parallel
    {
        std::vector<float> work(g.across_channels ? (2 * static_cast<size_t>(g.local_size + 1) + 1) * kChunk : 0);
#pragma omp for schedule(static)
        for (int n = 0; n < num; ++n) {
            const long o = n * count;
            const float* scale = g.across_channels ? nullptr : scratch + o;
            if (g.beta == 0.75f)
                Compiled<L, BackwardImage<true>>::run(x + o, y + o, scale, dy + o, g, count, coeff, dx + o, work.data());
            else
                Compiled<L, BackwardImage<false>>::run(x + o, y + o, scale, dy + o, g, count, coeff, dx + o,
                                                       work.data());
        }
    }
}

size_t portable_scratch(const LrnGeometry& g, int num) {
    return g.across_channels ? 0 : static_cast<size_t>(num) * g.channels * g.height * g.width;
}
template <Isa L>
const LrnKernel::Passes kPortable{portable_forward<L>, portable_backward<L>, portable_scratch};

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
    scratch_floats_ = passes_->scratch_floats(g, num);
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
