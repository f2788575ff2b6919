#include "kernels/conv_implicit.h"

#include <omp.h>

#include <algorithm>

namespace rudra::kernels {

bool ImplicitConvForward::supports(const MicroKernel& uk, const ConvGeometry& g) {
    if (!uk.indirect || uk.nr != 32) return false;
    if (g.stride_h != 1 || g.stride_w != 1 || g.dilation_h != 1 || g.dilation_w != 1) return false;
    const int oh = g.out_h(), ow = g.out_w();
    const long padded = static_cast<long>(g.channels) * (g.height + 2 * g.pad_h) * (g.width + 2 * g.pad_w);
    return oh > 0 && padded < (1L << 31) && (ow % 32 == 0 || (ow == 16 && oh % 2 == 0) || (ow == 8 && oh % 4 == 0));
}

ImplicitConvForward::ImplicitConvForward(const MicroKernel& uk, const ConvGeometry& g, int out_channels)
    : uk_(uk), g_(g), m_(out_channels), hp_(g.height + 2 * g.pad_h), wp_(g.width + 2 * g.pad_w),
      padded_floats_(static_cast<size_t>(g.channels) * hp_ * wp_ + 16) {  // + 16: a whole vector past the end
    offsets_.reserve(static_cast<size_t>(g.col_rows()));
    for (int c = 0; c < g.channels; ++c)
        for (int kh = 0; kh < g.kernel_h; ++kh)
            for (int kw = 0; kw < g.kernel_w; ++kw) offsets_.push_back((c * hp_ + kh) * wp_ + kw);
}

void ImplicitConvForward::run(const float* packed_w, const float* img, float* y, float* padded, int threads) const {
    // The padded copy: zero borders, the image in the middle.
    std::fill(padded, padded + padded_floats_, 0.0f);
    for (int c = 0; c < g_.channels; ++c)
        for (int iy = 0; iy < g_.height; ++iy) {
            const float* src = img + (static_cast<long>(c) * g_.height + iy) * g_.width;
            std::copy(src, src + g_.width, padded + (static_cast<long>(c) * hp_ + iy + g_.pad_h) * wp_ + g_.pad_w);
        }
    const int ow = g_.out_w(), P = g_.col_cols(), K = g_.col_rows(), MR = uk_.mr;
    const int tiles = P / 32, panels = (m_ + MR - 1) / MR;
    const int64_t m_round = static_cast<int64_t>(panels) * MR;
    auto tile = [&](int t) {
        const int p0 = t * 32, oy = p0 / ow, ox = p0 % ow;
        // The tile's pieces: two halves of one row, two rows of 16 or four rows of 8.
        const float* row = padded + static_cast<long>(oy) * wp_ + ox;
        const int parts = ow == 8 ? 4 : 2;
        const float* bases[4] = {row, ow % 32 == 0 ? row + 16 : row + wp_, row, row};
        if (parts == 4) {
            bases[2] = row + 2 * wp_;
            bases[3] = row + 3 * wp_;
        }
        for (int ir = 0; ir < panels; ++ir) {
            const int rows = std::min(MR, m_ - ir * MR);
            float* c = y + static_cast<long>(ir) * MR * P + p0;
            // pack_a_matrix's layout: kc-deep slices of m_round x kc, MR-row panels in each.
            for (int pc = 0; pc < K; pc += uk_.kc) {
                const int kc = std::min(uk_.kc, K - pc);
                const float* a = packed_w + m_round * pc + static_cast<int64_t>(ir) * MR * kc;
                uk_.indirect(rows, parts, kc, a, bases, offsets_.data() + pc, c, P, pc == 0 ? 0.0f : 1.0f);
            }
        }
    };
    const int nt = omp_in_parallel() ? 1 : std::max(1, std::min(threads, tiles));
    if (nt == 1) {
        for (int t = 0; t < tiles; ++t) tile(t);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < tiles; ++t) tile(t);
}

}  // namespace rudra::kernels
