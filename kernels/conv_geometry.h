// Shape of one 2-D convolution over a single image (one group's worth of channels is chosen by
// the caller through pointer offsets).
#pragma once
#include "kernels/transpose.h"
#include <cstddef>
#include <cstdint>
#include <string>

namespace rudra::kernels {

struct ConvGeometry {
    int channels = 0, height = 0, width = 0;  // input plane set
    int kernel_h = 1, kernel_w = 1;
    int pad_h = 0, pad_w = 0;  // before the first row and column
    int stride_h = 1, stride_w = 1;
    int dilation_h = 1, dilation_w = 1;
    // After the last row and column (benchdnn's asymmetric padding, negative when the last inputs
    // are not read); kSameAsStart: pad_h, pad_w. Last, so that positional initialisers of the
    // fields above keep their meaning.
    static constexpr int kSameAsStart = -(1 << 30);
    int pad_bottom = kSameAsStart, pad_right = kSameAsStart;

    int pad_b() const { return pad_bottom == kSameAsStart ? pad_h : pad_bottom; }
    int pad_r() const { return pad_right == kSameAsStart ? pad_w : pad_right; }
    int out_h() const { return (height + pad_h + pad_b() - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1; }
    int out_w() const { return (width + pad_w + pad_r() - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1; }
    // A zero-padded copy of the image that every window lies in (the end padding at least as wide
    // as the start's, so that buffers sized for symmetric padding stay valid).
    int padded_h() const { return height + pad_h + (pad_b() > pad_h ? pad_b() : pad_h); }
    int padded_w() const { return width + pad_w + (pad_r() > pad_w ? pad_r() : pad_w); }
    // Rows of the im2col matrix: one per (channel, kernel tap).
    int col_rows() const { return channels * kernel_h * kernel_w; }
    int col_cols() const { return out_h() * out_w(); }
    // A 1x1 stride-1 unpadded convolution reads the image as its own im2col matrix.
    bool is_pointwise() const {
        return kernel_h == 1 && kernel_w == 1 && pad_h == 0 && pad_w == 0 && pad_b() == 0 && pad_r() == 0 &&
               stride_h == 1 && stride_w == 1;
    }
};

// Why `g` cannot run, or empty: a field out of range, a window larger than the padded input, or a
// size the kernels compute in int (padded image, output, im2col rows and columns, one image's
// values) past an int. Computed in 64 bits; callers that build a geometry from input (a layer's
// setup, a bench descriptor) check it first.
std::string geometry_problem(const ConvGeometry& g);

// img is [channels, height, width]; col is [col_rows, col_cols] (Caffe's layout). Each call takes
// scratch of im2col_scratch_floats(g, nr) floats (nr: the sliver width of im2col_slivers, else 0).
size_t im2col_scratch_floats(const ConvGeometry& g, int nr);
void im2col(const float* img, const ConvGeometry& g, float* col, float* scratch);
// The transpose of the im2col matrix as the own SGEMM's packed B slivers: rows of col in groups
// of nr, out[(r / nr) * P * nr + p * nr + r % nr] = col[r][p] (P = col_cols()), the lanes past
// the last row zero. Backward-weights multiplies by col^T; writing it this way saves packing it.
// Rows are built nr at a time in the scratch and transposed into place, which is much faster
// than writing each value nr floats apart.
void im2col_slivers(const float* img, const ConvGeometry& g, int nr, float* out, float* scratch,
                    TransposeFn transpose_fn = transpose);
// Rows [r0, r1) of the im2col matrix as the BF16 GEMM's packed B slivers over all of those rows
// (kernels/bf16/bgemm.h): slivers of `width` columns (output pixels), each K2 = (r1 - r0 + 1) / 2
// steps of `width` pair words, word (q, l) of sliver s = (bf16(col[r0 + 2q][s width + l]),
// bf16(col[r0 + 2q + 1][s width + l])) at out[(s K2 + q) width + l]; past the last row or column
// zero. Each pair of rows is read by `pair_runs`, the BF16 kernel's, from a copy of the image
// widened by its padding on all sides, in which an im2col row is out_h() runs of out_w() values
// at a constant stride: no FP32 column matrix is written. Scratch: im2col_scratch_floats(g, 0).
using PairRunsFn = void (*)(const float* r0, const float* r1, int64_t run_stride, int runs, int run_len, int width,
                            int64_t sliver_words, uint32_t* dst);
void im2col_bf16_slivers(const float* img, const ConvGeometry& g, int r0, int r1, int width, PairRunsFn pair_runs,
                         uint32_t* out, float* scratch);
// Rows [r0, r1) of the im2col matrix, transposed, as the BF16 GEMM's packed B slivers over all of
// its columns (backward-weights multiplies by col^T): sliver s holds rows [r0 + s width, ...), each
// K2 = (P + 1) / 2 steps of `width` pair words, word (q, l) = (bf16(col[r][2q]), bf16(col[r][2q +
// 1])) for r = r0 + s width + l, at out[(s K2 + q) width + l]; past r1 or P zero. A sliver's rows
// are rounded (`round_runs`) from the widened image and their pair words transposed into place;
// scratch of im2col_scratch_floats(g, width) floats.
// The widest sliver the BF16 im2col variants' scratch is sized for.
constexpr int kBf16SliverWidthMax = 32;
using RoundRunsFn = void (*)(const float* src, int64_t run_stride, int runs, int run_len, uint16_t* out);
void im2col_bf16_row_slivers(const float* img, const ConvGeometry& g, int r0, int r1, int width,
                             RoundRunsFn round_runs, uint32_t* out, float* scratch, TransposeFn transpose_fn = transpose);
// Inverse scatter: img = sum of col entries landing on each pixel (img is overwritten).
void col2im(const float* col, const ConvGeometry& g, float* img, float* scratch);

}  // namespace rudra::kernels
