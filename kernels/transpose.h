// Out-of-place matrix transpose, dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows,
// c < cols. The convolution's im2col-into-slivers and packing use it; on x86 with AVX-512 it
// moves 16 x 16 tiles through registers (masked at the edges), elsewhere it walks cache-sized tiles.
#pragma once
#include <cstdint>

namespace rudra::kernels {

void transpose(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst);
// The portable path, also used for the edges the vector path leaves (tests compare the two).
void transpose_portable(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst);

}  // namespace rudra::kernels
