// Forward convolution without im2col ("implicit GEMM") for stride-1, undilated layers: each
// image is copied once into a zero-padded buffer and the micro-kernel reads every B row
// (channel, tap) straight from it through a table of offsets. A register tile covers nr
// output pixels in pieces of nr/2 or nr/4 (at least 8) that each lie in one output row: on
// AVX-512 (nr 32) half of a row 32k wide, two rows of 16 or four of 8; on AVX2 (nr 16) pieces of
// 8. Saves writing and reading the column matrix, as large as the work itself.
//
// The taps run in (kh, c, kw) order, and a tile skips the kernel rows that read only the zero
// padding for all of its output rows: a range of taps, so that one packing of the weights serves
// every tile (a packed panel holds the taps in order). When a piece is a
// whole output row, the pieces of a tile are the same row of several images ("row mode",
// images_per_call() > 1), so that every tile is one output row and skips exactly its padded
// kernel rows: for 5 x 5 kernels with padding 2, 15% of the work on 8 x 8 images.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_geometry.h"
#include "kernels/sgemm/micro_kernel.h"
#include "kernels/transpose.h"

namespace rudra::kernels {

class ImplicitConvForward {
public:
    // "" when `kernel` has an indirect tile and the geometry tiles into pieces as above, else why not.
    static std::string declines(const MicroKernel& kernel, const ConvGeometry& g);

    // Row mode is taken only when it wastes nothing and keeps every thread busy: `images` (the
    // mini-batch) divides into groups, and there are at least `team` groups.
    ImplicitConvForward(const MicroKernel& kernel, const ConvGeometry& g, int out_channels, int images = 1,
                        int team = 1);
    // Weights w [out_channels][channels][kh][kw], packed once per batch into packed_floats(),
    // on up to `threads` threads.
    size_t packed_floats() const { return packed_floats_; }
    void pack_weights(const float* w, float* packed, int threads) const;
    // For the backward-data pass of a layer whose weights are w [channels][out_channels][kh][kw]
    // (this one's channels and out_channels swapped): those weights rotated by 180 degrees, packed
    // as pack_weights packs.
    void pack_rotated_weights(const float* w, float* packed, int threads) const;
    // Images one run() takes (1, or the pieces of a tile in row mode; it divides the
    // mini-batch) and the scratch it needs.
    int images_per_call() const { return group_; }
    size_t scratch_floats() const { return static_cast<size_t>(group_) * padded_floats_; }
    // For images_per_call() consecutive images of imgs (in_stride apart): y[out_channels][P] =
    // W x, the images' outputs out_stride apart; up to `threads` threads.
    void run(const float* packed, const float* imgs, long in_stride, float* ys, long out_stride, float* scratch,
             int threads) const;

private:
    // Packs the weight of filter f, channel c, tap (kh, kw) from at[f * sf + c * sc + kh * sh + kw * sw].
    void pack(const float* at, int64_t sf, int64_t sc, int64_t sh, int64_t sw, float* packed, int threads) const;
    struct Range {  // taps [k_begin, k_begin + k_count): a tile's kernel rows
        int k_begin, k_count;
    };
    const MicroKernel& uk_;
    ConvGeometry g_;
    int m_, hp_, wp_, pw_, parts_, group_, tiles_;
    size_t padded_floats_, packed_floats_;
    std::vector<int32_t> offsets_;  // per tap (kh, c, kw): c * hp * wp + kh * wp + kw
    std::vector<Range> ranges_;
    std::vector<int> tile_range_;   // per tile: its index in ranges_
};

// Forward convolution without im2col for any stride and output width, vectorised over output
// channels instead of pixels: y^T = im2col(x)^T W^T, where the gather tile reads each row of
// A (one output pixel's taps) from the zero-padded image in runs of consecutive values and B is
// W^T, packed once per batch as slivers of nr output channels. A tile is mr pixels x nr channels,
// written transposed into y. Layers whose output rows do not split into the pixel-vectorised
// tiles' pieces (AlexNet's 55-, 27- and 13-wide rows) or that are strided (conv1's stride 4)
// take this path.
// With more channels than twice kernel_w the padded image is laid out channels last and the taps
// run (kh, kw, c): a run is a pixel's channels (256 values for AlexNet's conv3, against 3 along
// a kernel row), so the tile sets up its row addresses once per kernel tap instead of once per
// three steps, and reads each pixel's channels as one stream.
class GatherConvForward {
public:
    // "" when `kernel` has a gather tile and the layer is undilated, else why not.
    static std::string declines(const MicroKernel& kernel, const ConvGeometry& g);

    GatherConvForward(const MicroKernel& kernel, const ConvGeometry& g, int out_channels, TransposeFn transpose_fn);
    // Weights w [out_channels][channels][kh][kw] as slivers of W^T: packed_floats() floats.
    size_t packed_floats() const { return static_cast<size_t>(o_round_) * g_.col_rows(); }
    void pack_weights(const float* w, float* packed, int threads) const;
    // For backward-data as this convolution (channels: the layer's output channels): the layer's
    // weights w [channels][out_channels][kh][kw] rotated by 180 degrees, packed as pack_weights packs.
    void pack_rotated_weights(const float* w, float* packed, int threads) const;
    size_t scratch_floats() const { return padded_floats_ + tile_floats_; }
    // y[out_channels][pixels] = W x for one image, on up to `threads` threads.
    void run(const float* packed, const float* img, float* y, float* scratch, int threads) const;

private:
    // Packs src(o, i, t) = src[o o_stride + i i_stride + t] (o: output channel, i: input channel,
    // t: tap kh kernel_w + kw), tap t taken as tap taps - 1 - t when `rotate`.
    void pack(const float* src, long o_stride, long i_stride, bool rotate, float* packed, int threads) const;

    const MicroKernel& uk_;
    ConvGeometry g_;
    TransposeFn transpose_;
    bool channels_last_;  // padded image [hp][wp][channels], taps (kh, kw, c); else [channels][hp][wp], (c, kh, kw)
    int m_, o_round_, hp_, wp_, run_, kc_;
    size_t padded_floats_, tile_floats_;
    std::vector<int32_t> pixel_offsets_;  // per output pixel: where its window starts in the padded image
    // Per run of run_ taps (channels last: a piece of one tap's channels; else one (c, kh)'s
    // kernel row): where it starts, relative to the pixel.
    std::vector<int32_t> run_offsets_;
};

// Backward-weights the same way, as dW^T = im2col(x) dy^T: the micro-kernel gathers A from the
// padded image (rows: kernel taps, columns: output pixels) and reads dy^T as packed slivers of
// nr output channels, which one transpose per image writes. No im2col is built.
class ImplicitConvWeights {
public:
    // "" when `kernel` has a gather tile and the layer is stride 1 and undilated, else why not.
    static std::string declines(const MicroKernel& kernel, const ConvGeometry& g);

    // transpose_fn writes dy^T (kernels/transpose.h).
    ImplicitConvWeights(const MicroKernel& kernel, const ConvGeometry& g, int out_channels, TransposeFn transpose_fn);
    size_t scratch_floats() const { return padded_floats_ + slivers_floats_; }
    // The accumulator holds dW^T: col_rows() x out_channels rounded up to nr (acc_ld()), its
    // rows in (kh, c, kw) order; add_to puts them back in the filters' order.
    int acc_ld() const { return o_round_; }
    size_t acc_floats() const { return static_cast<size_t>(g_.col_rows()) * o_round_; }
    // acc += im2col(img) dy^T for one image (dy: out_channels x col_cols()).
    void accumulate(const float* img, const float* dy, float* acc, float* scratch, int threads) const;
    // dw[o][r] += the sum of acc[r][o] over the `count` accumulators, on up to `threads` threads.
    void add_to(const float* const* accs, int count, float* dw, int threads) const;

private:
    const MicroKernel& uk_;
    ConvGeometry g_;
    TransposeFn transpose_;
    int m_, o_round_, hp_, wp_;
    size_t padded_floats_, slivers_floats_;
    // Per tap, in (kh, c, kw) order: its offset in the padded image, its kernel row, and its
    // index in a filter's weights (c, kh, kw).
    std::vector<int32_t> tap_offsets_, tap_kh_, tap_weight_;
    std::vector<int32_t> row_offsets_;  // per output row y: y * wp (its pixels follow contiguously)
};

}  // namespace rudra::kernels
