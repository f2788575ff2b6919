// im2col / col2im. For convolutions of stride 1 and no dilation along the width (the common
// case) every image row is first widened by the padding, so that each row segment of the
// column matrix is one plain copy (or add) of out_w values with no bounds to test: on small
// images (out_w 8-32) the bounds, not the copying, used to take most of the time.
#include <algorithm>
#include <cstring>

#include "kernels/conv_geometry.h"
#include "kernels/transpose.h"

namespace rudra::kernels {
namespace {

bool plain_width(const ConvGeometry& g) { return g.stride_w == 1 && g.dilation_w == 1; }
size_t round16(size_t n) { return (n + 15) / 16 * 16; }
int padded_width(const ConvGeometry& g) { return g.padded_w(); }
size_t padded_floats(const ConvGeometry& g) {
    return plain_width(g) ? round16(static_cast<size_t>(g.channels) * g.height * padded_width(g)) : 0;
}

// Image rows widened by zeros on each side: [channels * height][padded_w()].
void widen_rows(const float* img, const ConvGeometry& g, float* wide) {
    const int wp = padded_width(g), rows = g.channels * g.height;
    for (int r = 0; r < rows; ++r, img += g.width, wide += wp) {
        std::fill(wide, wide + g.pad_w, 0.0f);
        std::copy(img, img + g.width, wide + g.pad_w);
        std::fill(wide + g.pad_w + g.width, wide + wp, 0.0f);
    }
}

// Row (c, kh, kw) of the im2col matrix, out_h() * out_w() values, from the widened rows.
void im2col_row_wide(const float* wide, const ConvGeometry& g, int c, int kh, int kw, float* out) {
    const int oh = g.out_h(), ow = g.out_w(), wp = padded_width(g);
    for (int y = 0; y < oh; ++y, out += ow) {
        const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
        if (iy < 0 || iy >= g.height) {
            std::fill(out, out + ow, 0.0f);
            continue;
        }
        const float* src = wide + (static_cast<long>(c) * g.height + iy) * wp + kw;
        for (int x = 0; x < ow; ++x) out[x] = src[x];
    }
}

// The same from the image itself, any stride and dilation.
void im2col_row_strided(const float* img, const ConvGeometry& g, int c, int kh, int kw, float* out) {
    const int oh = g.out_h(), ow = g.out_w();
    const float* plane = img + static_cast<long>(c) * g.height * g.width;
    const int x_off = kw * g.dilation_w - g.pad_w;
    for (int y = 0; y < oh; ++y, out += ow) {
        const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
        if (iy < 0 || iy >= g.height) {
            std::fill(out, out + ow, 0.0f);
            continue;
        }
        const float* row = plane + static_cast<long>(iy) * g.width;
        for (int x = 0; x < ow; ++x) {
            const int ix = x * g.stride_w + x_off;
            out[x] = (ix >= 0 && ix < g.width) ? row[ix] : 0.0f;
        }
    }
}

// Calls row(c, kh, kw, out) for the rows of the im2col matrix in order, P floats apart.
template <class Row>
void for_rows(const float* img, const ConvGeometry& g, float* scratch, Row&& row) {
    if (plain_width(g)) {
        widen_rows(img, g, scratch);
        row([&](int c, int kh, int kw, float* out) { im2col_row_wide(scratch, g, c, kh, kw, out); });
    } else {
        row([&](int c, int kh, int kw, float* out) { im2col_row_strided(img, g, c, kh, kw, out); });
    }
}

}  // namespace

size_t im2col_scratch_floats(const ConvGeometry& g, int nr) {
    return padded_floats(g) + round16(static_cast<size_t>(std::max(nr, 0)) * g.col_cols());
}

void im2col(const float* img, const ConvGeometry& g, float* col, float* scratch) {
    const long P = g.col_cols();
    for_rows(img, g, scratch, [&](auto&& make_row) {
        for (int c = 0; c < g.channels; ++c)
            for (int kh = 0; kh < g.kernel_h; ++kh)
                for (int kw = 0; kw < g.kernel_w; ++kw, col += P) make_row(c, kh, kw, col);
    });
}

void im2col_slivers(const float* img, const ConvGeometry& g, int nr, float* out, float* scratch,
                    TransposeFn transpose_fn) {
    // nr rows of im2col at a time, written contiguously, then transposed into their sliver.
    const int P = g.col_cols(), K = g.col_rows(), taps = g.kernel_h * g.kernel_w;
    float* rows = scratch + padded_floats(g);
    for_rows(img, g, scratch, [&](auto&& make_row) {
        for (int r0 = 0; r0 < K; r0 += nr) {
            const int n = std::min(nr, K - r0);
            for (int i = 0; i < n; ++i) {
                const int r = r0 + i, c = r / taps, tap = r % taps;
                make_row(c, tap / g.kernel_w, tap % g.kernel_w, rows + static_cast<long>(i) * P);
            }
            if (n < nr) std::fill(rows + static_cast<long>(n) * P, rows + static_cast<long>(nr) * P, 0.0f);
            transpose_fn(rows, nr, P, P, out + static_cast<long>(r0) * P, nr);
        }
    });
}

void col2im(const float* col, const ConvGeometry& g, float* img, float* scratch) {
    const int oh = g.out_h(), ow = g.out_w();
    if (plain_width(g)) {
        // Accumulate into widened rows, then keep their middle.
        const int wp = padded_width(g);
        std::fill(scratch, scratch + static_cast<size_t>(g.channels) * g.height * wp, 0.0f);
        for (int c = 0; c < g.channels; ++c)
            for (int kh = 0; kh < g.kernel_h; ++kh)
                for (int kw = 0; kw < g.kernel_w; ++kw)
                    for (int y = 0; y < oh; ++y, col += ow) {
                        const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                        if (iy < 0 || iy >= g.height) continue;
                        float* dst = scratch + (static_cast<long>(c) * g.height + iy) * wp + kw;
                        for (int x = 0; x < ow; ++x) dst[x] += col[x];
                    }
        const float* wide = scratch + g.pad_w;
        for (int r = 0; r < g.channels * g.height; ++r, wide += wp, img += g.width)
            std::copy(wide, wide + g.width, img);
        return;
    }
    std::memset(img, 0, sizeof(float) * g.channels * g.height * g.width);
    for (int c = 0; c < g.channels; ++c) {
        float* plane = img + static_cast<long>(c) * g.height * g.width;
        for (int kh = 0; kh < g.kernel_h; ++kh)
            for (int kw = 0; kw < g.kernel_w; ++kw)
                for (int y = 0; y < oh; ++y, col += ow) {
                    const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                    if (iy < 0 || iy >= g.height) continue;
                    float* row = plane + static_cast<long>(iy) * g.width;
                    const int x_off = kw * g.dilation_w - g.pad_w;
                    for (int x = 0; x < ow; ++x) {
                        const int ix = x * g.stride_w + x_off;
                        if (ix >= 0 && ix < g.width) row[ix] += col[x];
                    }
                }
    }
}

}  // namespace rudra::kernels
