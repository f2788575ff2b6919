// Forward convolution without im2col ("implicit GEMM") for stride-1, undilated layers: each
// image is copied once into a zero-padded buffer and the micro-kernel reads every B row
// (channel, tap) straight from it through a table of offsets. A register tile covers 32
// consecutive output pixels: part of an output row that is a multiple of 32 wide, two rows 16
// wide or four rows 8 wide. Saves writing and reading the column matrix, which is as large as the work itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/conv_geometry.h"
#include "kernels/sgemm/micro_kernel.h"

namespace rudra::kernels {

class ImplicitConvForward {
public:
    // Whether `kernel` has an indirect tile and the geometry tiles by 32 pixels as above.
    static bool supports(const MicroKernel& kernel, const ConvGeometry& g);

    ImplicitConvForward(const MicroKernel& kernel, const ConvGeometry& g, int out_channels);
    size_t scratch_floats() const { return padded_floats_; }
    // y[out_channels][P] = W x; packed_w from pack_a_matrix(kernel, Trans::No, out_channels,
    // col_rows(), ...). `scratch` holds scratch_floats(); up to `threads` OpenMP threads.
    void run(const float* packed_w, const float* img, float* y, float* scratch, int threads) const;

private:
    const MicroKernel& uk_;
    ConvGeometry g_;
    int m_, hp_, wp_;
    size_t padded_floats_;
    std::vector<int32_t> offsets_;  // per im2col row (c, kh, kw): c * hp * wp + kh * wp + kw
};

}  // namespace rudra::kernels
