#include "kernels/conv_implicit.h"

#include <omp.h>

#include <algorithm>
#include <string>

#include "kernels/sgemm/sgemm.h"
#include "kernels/transpose.h"

namespace rudra::kernels {
namespace {

// The rows copied and cleared here are a few to 32 floats; GCC turns such loops into calls to
// memmove and memset, whose call overhead on rows that short is a visible share of a small
// net's step. These functions keep them loops.
#define RUDRA_SHORT_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))

RUDRA_SHORT_LOOPS inline void copy_floats(float* __restrict dst, const float* __restrict src, int n) {
    for (int i = 0; i < n; ++i) dst[i] = src[i];
}

RUDRA_SHORT_LOOPS inline void zero_floats(float* dst, long n) {
    for (long i = 0; i < n; ++i) dst[i] = 0.0f;
}

// img [channels][height][width] into [channels][hp][wp] with zero borders (pad_h, pad_w); only
// the borders and the floats past the last channel are cleared, the rest is overwritten.
RUDRA_SHORT_LOOPS void pad_image(const float* img, const ConvGeometry& g, int hp, int wp, float* padded,
                                 size_t padded_floats) {
    const long plane = static_cast<long>(hp) * wp, right = wp - g.pad_w - g.width;
    for (int c = 0; c < g.channels; ++c) {
        float* p = padded + c * plane;
        zero_floats(p, static_cast<long>(g.pad_h) * wp);
        for (int iy = 0; iy < g.height; ++iy) {
            float* row = p + static_cast<long>(iy + g.pad_h) * wp;
            zero_floats(row, g.pad_w);
            copy_floats(row + g.pad_w, img + (static_cast<long>(c) * g.height + iy) * g.width, g.width);
            zero_floats(row + g.pad_w + g.width, right);
        }
        zero_floats(p + static_cast<long>(g.pad_h + g.height) * wp, plane - static_cast<long>(g.pad_h + g.height) * wp);
    }
    zero_floats(padded + g.channels * plane, static_cast<long>(padded_floats) - g.channels * plane);
}

// The same into [hp][wp][channels] (GatherConvForward's channels-last layout): each input row's
// channels are one transpose.
RUDRA_SHORT_LOOPS void pad_image_channels_last(const float* img, const ConvGeometry& g, int wp, TransposeFn transpose,
                                               float* padded, size_t padded_floats) {
    const long C = g.channels, row = wp * C, plane = static_cast<long>(g.height) * g.width;
    zero_floats(padded, g.pad_h * row);
    for (int iy = 0; iy < g.height; ++iy) {
        float* r = padded + (iy + g.pad_h) * row;
        zero_floats(r, g.pad_w * C);
        transpose(img + static_cast<long>(iy) * g.width, g.channels, g.width, plane, r + g.pad_w * C, C);
        zero_floats(r + (g.pad_w + g.width) * C, (wp - g.pad_w - g.width) * C);
    }
    const long used = (g.pad_h + g.height) * row;
    zero_floats(padded + used, static_cast<long>(padded_floats) - used);
}

// A pixel's channels in equal runs of at most kc taps (fewer only when no such split exists).
int channel_run(int channels, int kc) {
    int pieces = (channels + kc - 1) / kc;
    while (channels % pieces != 0) ++pieces;
    return channels / pieces;
}

// f(i) for i in [0, count) on up to `threads` OpenMP threads (one inside a parallel region).
template <class F>
void parallel_for(int count, int threads, F&& f) {
    const int nt = omp_in_parallel() ? 1 : std::max(1, std::min(threads, count));
    if (nt == 1) {
        for (int i = 0; i < count; ++i) f(i);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < count; ++i) f(i);
}

constexpr int kMaxGatherRows = 16;  // rows of A one gather tile reads (the micro-kernel's mr)
constexpr int kMaxParts = 8;        // pieces of a B row in an indirect tile (nr / 8 for nr up to 64)
constexpr int kMaxTileFloats = 16 * 64;  // mr x nr of any micro-kernel with indirect tiles

// "" for a stride-1, undilated layer whose padded image 32-bit offsets reach, else why not.
std::string unit_stride_declines(const ConvGeometry& g) {
    const long padded = static_cast<long>(g.channels) * g.padded_h() * g.padded_w();
    if (g.stride_h != 1 || g.stride_w != 1)
        return "stride " + std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w);
    if (g.dilation_h != 1 || g.dilation_w != 1) return "dilated";
    if (g.out_h() <= 0 || g.out_w() <= 0) return "no output";
    if (padded >= (1L << 31)) return "padded image beyond 32-bit offsets";
    return "";
}

// The widest piece, nr/2 or nr/4 floats and at least 8, that output rows divide into; 0: none.
int piece_width(int nr, int ow) {
    for (int pw : {nr / 2, nr / 4})
        if (pw >= 8 && ow % pw == 0) return pw;
    return 0;
}

}  // namespace

std::string ImplicitConvForward::declines(const MicroKernel& uk, const ConvGeometry& g) {
    if (!uk.indirect) return std::string("micro-kernel ") + uk.name + " has no indirect tile";
    if (uk.mr * uk.nr > kMaxTileFloats) return std::string("micro-kernel ") + uk.name + "'s tile is too large";
    if (std::string why = unit_stride_declines(g); !why.empty()) return why;
    if (piece_width(uk.nr, g.out_w()) == 0)
        return "output rows of " + std::to_string(g.out_w()) + " split into no pieces of " + std::to_string(uk.nr / 2) +
               " or " + std::to_string(uk.nr / 4) + " (at least 8)";
    if (g.col_cols() % uk.nr)
        return std::to_string(g.col_cols()) + " output pixels, not a multiple of " + std::to_string(uk.nr);
    return "";
}

ImplicitConvForward::ImplicitConvForward(const MicroKernel& uk, const ConvGeometry& g, int out_channels, int images,
                                         int team)
    : uk_(uk), g_(g), m_(out_channels), hp_(g.padded_h()), wp_(g.padded_w()),
      pw_(piece_width(uk.nr, g.out_w())), parts_(uk.nr / pw_),
      group_(pw_ == g.out_w() && parts_ > 1 && images % parts_ == 0 && images / parts_ >= team ? parts_ : 1),
      tiles_(group_ > 1 ? g.out_h() : g.col_cols() / uk.nr),
      padded_floats_(static_cast<size_t>(g.channels) * hp_ * wp_ + 16) {  // + 16: a whole vector past the end
    const int C = g.channels, KH = g.kernel_h, KW = g.kernel_w, ow = g.out_w(), per_kh = C * KW;
    offsets_.reserve(static_cast<size_t>(g.col_rows()));
    for (int kh = 0; kh < KH; ++kh)
        for (int c = 0; c < C; ++c)
            for (int kw = 0; kw < KW; ++kw) offsets_.push_back((c * hp_ + kh) * wp_ + kw);
    // Each tile's output rows [ra, rb] reach the image through kernel rows [lo, hi] only.
    packed_floats_ = packed_a_floats(uk, m_, g.col_rows());
    for (int t = 0; t < tiles_; ++t) {
        const int ra = group_ > 1 ? t : t * uk.nr / ow, rb = group_ > 1 ? t : (t * uk.nr + uk.nr - 1) / ow;
        const int lo = std::max(0, g.pad_h - rb), hi = std::min(KH - 1, g.height - 1 + g.pad_h - ra);
        const Range r{lo * per_kh, std::max(0, hi - lo + 1) * per_kh};
        auto same = [&](const Range& o) { return o.k_begin == r.k_begin && o.k_count == r.k_count; };
        auto found = std::find_if(ranges_.begin(), ranges_.end(), same);
        if (found == ranges_.end()) {
            ranges_.push_back(r);
            found = ranges_.end() - 1;
        }
        tile_range_.push_back(static_cast<int>(found - ranges_.begin()));
    }
}

// The filters' taps in (kh, c, kw) order, packed as pack_a_matrix packs a matrix (kb-deep slices
// of MR-row panels, MR floats per tap): a tile's range of taps is then a run of every panel, and
// one packing serves all tiles. Written straight from w, a (slice, panel) per job: at a
// mini-batch of 1 the packing took as long as the convolution (5 x 5 kernels, 8 x 8 images: a
// reordered copy, then one packing per tap range, 3.8x the weights).
void ImplicitConvForward::pack_weights(const float* w, float* packed, int threads) const {
    const int64_t KH = g_.kernel_h, KW = g_.kernel_w;
    pack(w, g_.channels * KH * KW, KH * KW, KW, 1, packed, threads);
}

// Filter f, channel c, tap (kh, kw) here is w[c][f][KH - 1 - kh][KW - 1 - kw] (the rotation the
// backward-data pass takes, without a rotated copy).
void ImplicitConvForward::pack_rotated_weights(const float* w, float* packed, int threads) const {
    const int64_t KH = g_.kernel_h, KW = g_.kernel_w;
    pack(w + (KH - 1) * KW + (KW - 1), KH * KW, static_cast<int64_t>(m_) * KH * KW, -KW, -1, packed, threads);
}

void ImplicitConvForward::pack(const float* at, int64_t sf, int64_t sc, int64_t sh, int64_t sw, float* packed,
                               int threads) const {
    const int C = g_.channels, KW = g_.kernel_w, K = g_.col_rows(), MR = uk_.mr;
    const int kb = k_block(uk_, K), panels = (m_ + MR - 1) / MR, slices = (K + kb - 1) / kb;
    const int64_t m_round = static_cast<int64_t>(panels) * MR;
    parallel_for(slices * panels, threads, [&](int job) {
        const int k0 = job / panels * kb, q = job % panels, depth = std::min(kb, K - k0);
        const int live = std::min(MR, m_ - q * MR);
        float* dst = packed + m_round * k0 + static_cast<int64_t>(q) * MR * depth;
        const float* filters = at + static_cast<int64_t>(q) * MR * sf;
        int kh = k0 / (C * KW), c = k0 / KW % C, kw = k0 % KW;
        for (int k = 0; k < depth; ++k, dst += MR) {
            const float* tap = filters + c * sc + kh * sh + kw * sw;
            int i = 0;
            for (; i < live; ++i) dst[i] = tap[i * sf];
            for (; i < MR; ++i) dst[i] = 0.0f;
            if (++kw == KW) {
                kw = 0;
                if (++c == C) c = 0, ++kh;
            }
        }
    });
}

void ImplicitConvForward::run(const float* packed, const float* imgs, long in_stride, float* ys, long out_stride,
                              float* scratch, int threads) const {
    for (int q = 0; q < group_; ++q)
        pad_image(imgs + q * in_stride, g_, hp_, wp_, scratch + q * padded_floats_, padded_floats_);
    const int ow = g_.out_w(), P = g_.col_cols(), MR = uk_.mr, NR = uk_.nr, K = g_.col_rows();
    const int kb = k_block(uk_, K);  // as pack_a_matrix laid the weights out
    const int panels = (m_ + MR - 1) / MR;
    const int64_t m_round = static_cast<int64_t>(panels) * MR;
    auto tile = [&](int t) {
        const Range& range = ranges_[static_cast<size_t>(tile_range_[static_cast<size_t>(t)])];
        // The tile's pieces of pw output pixels, each within one output row: consecutive pixels
        // of one image, or row t of each image of the group.
        const float* bases[kMaxParts];
        const int p0 = t * NR;
        for (int q = 0; q < parts_; ++q) {
            const int pixel = p0 + q * pw_;
            bases[q] = group_ > 1 ? scratch + q * padded_floats_ + static_cast<long>(t) * wp_
                                  : scratch + static_cast<long>(pixel / ow) * wp_ + pixel % ow;
        }
        alignas(64) float part_tile[kMaxTileFloats];  // row mode: the MR x NR tile, then copied out
        for (int ir = 0; ir < panels; ++ir) {
            const int rows = std::min(MR, m_ - ir * MR);
            float* c = group_ > 1 ? part_tile : ys + static_cast<long>(ir) * MR * P + p0;
            const int64_t rs_c = group_ > 1 ? NR : P;
            if (range.k_count == 0)  // every tap reads padding
                for (int i = 0; i < rows; ++i) std::fill(c + i * rs_c, c + i * rs_c + NR, 0.0f);
            // pack_a_matrix's layout: kb-deep slices of m_round x kb, MR-row panels of MR floats
            // per tap in each; the range's taps are read in pieces that stay within a slice.
            const int end = range.k_begin + range.k_count;
            for (int k = range.k_begin; k < end;) {
                const int slice = k / kb * kb, depth = std::min(kb, K - slice);
                const int kc = std::min(slice + depth, end) - k;
                const float* a = packed + m_round * slice + static_cast<int64_t>(ir) * MR * depth +
                                 static_cast<int64_t>(k - slice) * MR;
                uk_.indirect(rows, parts_, kc, a, bases, offsets_.data() + k, c, rs_c,
                             k == range.k_begin ? 0.0f : 1.0f);
                k += kc;
            }
            if (group_ == 1) continue;
            for (int q = 0; q < group_; ++q)
                for (int i = 0; i < rows; ++i) {
                    copy_floats(ys + q * out_stride + static_cast<long>(ir * MR + i) * P + static_cast<long>(t) * ow,
                                part_tile + i * NR + q * pw_, pw_);
                }
        }
    };
    parallel_for(tiles_, threads, tile);
}

std::string GatherConvForward::declines(const MicroKernel& uk, const ConvGeometry& g) {
    if (!uk.gather_a) return std::string("micro-kernel ") + uk.name + " has no gather tile";
    if (uk.mr > kMaxGatherRows) return std::string("micro-kernel ") + uk.name + "'s tile is too tall";
    if (g.dilation_h != 1 || g.dilation_w != 1) return "dilated";
    if (g.out_h() <= 0 || g.out_w() <= 0) return "no output";
    if (static_cast<long>(g.channels) * g.padded_h() * g.padded_w() >= (1L << 31))
        return "padded image beyond 32-bit offsets";
    return "";
}

GatherConvForward::GatherConvForward(const MicroKernel& uk, const ConvGeometry& g, int out_channels,
                                     TransposeFn transpose_fn)
    : uk_(uk), g_(g), transpose_(transpose_fn), channels_last_(g.channels >= 2 * g.kernel_w), m_(out_channels),
      o_round_((out_channels + uk.nr - 1) / uk.nr * uk.nr), hp_(g.padded_h()), wp_(g.padded_w()),
      run_(channels_last_ ? channel_run(g.channels, uk.kc) : g.kernel_w),
      // k-blocks of whole runs, so that a B block of kc x nr stays near the core
      kc_(std::max(1, uk.kc / run_) * run_),
      padded_floats_((static_cast<size_t>(g.channels) * hp_ * wp_ + 15) / 16 * 16),
      tile_floats_(static_cast<size_t>((g.col_cols() + uk.mr - 1) / uk.mr * uk.mr) * uk.nr) {
    const int C = g.channels, pixel = channels_last_ ? C : 1;  // floats from one padded pixel to the next
    for (int y = 0; y < g.out_h(); ++y)
        for (int x = 0; x < g.out_w(); ++x)
            pixel_offsets_.push_back((y * g.stride_h * wp_ + x * g.stride_w) * pixel);
    if (channels_last_) {
        for (int kh = 0; kh < g.kernel_h; ++kh)
            for (int kw = 0; kw < g.kernel_w; ++kw)
                for (int c = 0; c < C; c += run_) run_offsets_.push_back((kh * wp_ + kw) * C + c);
    } else {
        for (int c = 0; c < C; ++c)
            for (int kh = 0; kh < g.kernel_h; ++kh) run_offsets_.push_back((c * hp_ + kh) * wp_);
    }
}

void GatherConvForward::pack_weights(const float* w, float* packed, int threads) const {
    pack(w, g_.col_rows(), g_.kernel_h * g_.kernel_w, false, packed, threads);
}

void GatherConvForward::pack_rotated_weights(const float* w, float* packed, int threads) const {
    const int taps = g_.kernel_h * g_.kernel_w;
    pack(w, taps, static_cast<long>(m_) * taps, true, packed, threads);
}

void GatherConvForward::pack(const float* src, long o_stride, long i_stride, bool rotate, float* packed,
                             int threads) const {
    // Sliver s holds, for each tap in the tile's order, the weights of channels NR s .. NR s + NR - 1.
    const int K = g_.col_rows(), NR = uk_.nr, T = g_.kernel_h * g_.kernel_w, C = g_.channels;
    if (o_round_ != m_) std::fill(packed, packed + packed_floats(), 0.0f);
    const bool whole = !channels_last_ && !rotate;  // the sliver is one transpose of its filters
    // B's row of input channel i and tap t, and the distance between the rows of taps t and t + 1.
    auto row = [&](int i, int t) { return channels_last_ ? static_cast<long>(t) * C + i : static_cast<long>(i) * T + t; };
    const long tap_step = (rotate ? -1 : 1) * (channels_last_ ? C : 1);
    parallel_for((m_ + NR - 1) / NR, threads, [&](int s) {
        const int rows = std::min(NR, m_ - s * NR);
        const float* filters = src + static_cast<long>(s) * NR * o_stride;
        float* sliver = packed + static_cast<long>(s) * K * NR;
        if (whole) {
            transpose_(filters, rows, K, K, sliver, NR);
            return;
        }
        for (int i = 0; i < C; ++i)
            transpose_(filters + i * i_stride, rows, T, o_stride, sliver + row(i, rotate ? T - 1 : 0) * NR, tap_step * NR);
    });
}

void GatherConvForward::run(const float* packed, const float* img, float* y, float* scratch, int threads) const {
    float* padded = scratch;
    float* tile_out = scratch + padded_floats_;  // pixels x NR: one sliver's outputs, transposed
    if (channels_last_)
        pad_image_channels_last(img, g_, wp_, transpose_, padded, padded_floats_);
    else
        pad_image(img, g_, hp_, wp_, padded, padded_floats_);
    const int P = g_.col_cols(), K = g_.col_rows(), MR = uk_.mr, NR = uk_.nr;
    const int tiles = (P + MR - 1) / MR;
    const int nt = omp_in_parallel() ? 1 : std::max(1, std::min(threads, tiles));
    // Each thread takes a contiguous block of pixel tiles through every sliver and k-block: the
    // B block stays in its cache while the tiles pass, and its pixels' rows of y are its own.
    auto block = [&](int b) {
        const int t0 = static_cast<int>(static_cast<long>(tiles) * b / nt), t1 = static_cast<int>(static_cast<long>(tiles) * (b + 1) / nt);
        if (t0 == t1) return;
        const int p0 = t0 * MR, p1 = std::min(P, t1 * MR);
        for (int s = 0; s * NR < m_; ++s) {
            const float* sliver = packed + static_cast<long>(s) * K * NR;
            for (int pc = 0; pc < K; pc += kc_) {
                const int kc = std::min(kc_, K - pc);
                for (int t = t0; t < t1; ++t) {
                    const int rows = std::min(MR, P - t * MR);
                    const float* a_rows[kMaxGatherRows];
                    for (int i = 0; i < rows; ++i) a_rows[i] = padded + pixel_offsets_[static_cast<size_t>(t * MR + i)];
                    uk_.gather_a(rows, kc, run_, a_rows, run_offsets_.data() + pc / run_, sliver + static_cast<long>(pc) * NR,
                                 tile_out + static_cast<long>(t) * MR * NR, NR, pc == 0 ? 0.0f : 1.0f);
                }
            }
            transpose_(tile_out + static_cast<long>(p0) * NR, p1 - p0, std::min(NR, m_ - s * NR), NR,
                       y + static_cast<long>(s) * NR * P + p0, P);
        }
    };
    parallel_for(nt, nt, block);
}

std::string ImplicitConvWeights::declines(const MicroKernel& uk, const ConvGeometry& g) {
    if (!uk.gather_a) return std::string("micro-kernel ") + uk.name + " has no gather tile";
    if (uk.mr > kMaxGatherRows) return std::string("micro-kernel ") + uk.name + "'s tile is too tall";
    return unit_stride_declines(g);
}

ImplicitConvWeights::ImplicitConvWeights(const MicroKernel& uk, const ConvGeometry& g, int out_channels,
                                         TransposeFn transpose_fn)
    : uk_(uk), g_(g), transpose_(transpose_fn), m_(out_channels), o_round_((out_channels + uk.nr - 1) / uk.nr * uk.nr),
      hp_(g.padded_h()),
      wp_(g.padded_w()), padded_floats_((static_cast<size_t>(g.channels) * hp_ * wp_ + 15) / 16 * 16),
      slivers_floats_(static_cast<size_t>(g.col_cols()) * o_round_) {
    // Taps in (kh, c, kw) order, so that a panel of MR taps spans few kernel rows.
    for (int kh = 0; kh < g.kernel_h; ++kh)
        for (int c = 0; c < g.channels; ++c)
            for (int kw = 0; kw < g.kernel_w; ++kw) {
                tap_offsets_.push_back((c * hp_ + kh) * wp_ + kw);
                tap_kh_.push_back(kh);
                tap_weight_.push_back((c * g.kernel_h + kh) * g.kernel_w + kw);
            }
    for (int y = 0; y < g.out_h(); ++y) row_offsets_.push_back(y * wp_);
}

void ImplicitConvWeights::accumulate(const float* img, const float* dy, float* acc, float* scratch,
                                     int threads) const {
    float* padded = scratch;
    float* slivers = scratch + padded_floats_;
    pad_image(img, g_, hp_, wp_, padded, padded_floats_);
    // dy^T as slivers of NR channels: sliver s holds, for each pixel, channels NR s .. NR s + NR - 1.
    const int P = g_.col_cols(), K = g_.col_rows(), MR = uk_.mr, NR = uk_.nr;
    if (o_round_ != m_) std::fill(slivers, slivers + slivers_floats_, 0.0f);
    for (int s = 0; s * NR < m_; ++s)
        transpose_(dy + static_cast<long>(s) * NR * P, std::min(NR, m_ - s * NR), P, P,
                  slivers + static_cast<long>(s) * P * NR, NR);
    const int panels = (K + MR - 1) / MR;
    auto panel = [&](int ir) {
        const int r0 = ir * MR, rows = std::min(MR, K - r0);
        const float* a_rows[kMaxGatherRows];
        for (int i = 0; i < rows; ++i) a_rows[i] = padded + tap_offsets_[static_cast<size_t>(r0 + i)];
        // k runs over whole output rows (runs of OW pixels), about kc pixels at a time, and only
        // over the rows where some tap of the panel reads the image: for the others, all of its
        // taps read the zero padding (for a 5 x 5 kernel with padding 2 on 8 x 8 images, 15% of
        // the work).
        const int OW = g_.out_w(), rows_per_step = std::max(1, uk_.kc / OW);
        const int kh_lo = tap_kh_[static_cast<size_t>(r0)], kh_hi = tap_kh_[static_cast<size_t>(r0 + rows - 1)];
        const int y_lo = std::max(0, g_.pad_h - kh_hi), y_hi = std::min(g_.out_h(), g_.height + g_.pad_h - kh_lo);
        for (int s = 0; s * NR < m_; ++s)
            for (int y = y_lo; y < y_hi; y += rows_per_step) {
                const int pc = y * OW, kc = std::min(rows_per_step, y_hi - y) * OW;
                uk_.gather_a(rows, kc, OW, a_rows, row_offsets_.data() + y,
                             slivers + (static_cast<long>(s) * P + pc) * NR,
                             acc + static_cast<long>(r0) * o_round_ + s * NR, o_round_, 1.0f);
            }
    };
    parallel_for(panels, threads, panel);
}

void ImplicitConvWeights::add_to(const float* const* accs, int count, float* dw, int threads) const {
    // Blocks of kBlock output channels: each accumulator's block is transposed into rows of taps
    // (all of them summed there), and the rows are added into dw with the taps put back in the
    // filters' order. Read column by column instead, each value of acc is a cache line of its
    // own, and for a large layer that costs more than an image's products.
    if (count <= 0) return;
    constexpr int kBlock = 16;
    const int K = g_.col_rows(), blocks = (m_ + kBlock - 1) / kBlock;
    const int nt = omp_in_parallel() ? 1 : std::max(1, std::min(threads, blocks));
    std::vector<float> scratch(static_cast<size_t>(nt) * 2 * kBlock * K);
    parallel_for(blocks, nt, [&](int b) {
        // One thread (nt 1) may still be a thread of an enclosing parallel region: slot 0.
        const int slot = nt == 1 ? 0 : omp_get_thread_num();
        float* sum = scratch.data() + static_cast<size_t>(slot) * 2 * kBlock * K;
        float* part = sum + static_cast<size_t>(kBlock) * K;
        const int o0 = b * kBlock, n = std::min(kBlock, m_ - o0);
        for (int a = 0; a < count; ++a) {
            transpose_(accs[a] + o0, K, n, o_round_, a == 0 ? sum : part, K);
            if (a > 0)
                for (long i = 0; i < static_cast<long>(n) * K; ++i) sum[i] += part[i];
        }
        for (int j = 0; j < n; ++j) {
            float* row = dw + static_cast<long>(o0 + j) * K;
            const float* from = sum + static_cast<long>(j) * K;
            for (int r = 0; r < K; ++r) row[tap_weight_[static_cast<size_t>(r)]] += from[r];
        }
    });
}

}  // namespace rudra::kernels
