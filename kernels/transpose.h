// Out-of-place matrix transpose, dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows,
// c < cols. The convolution's im2col-into-slivers and backward-weights use it. Implementations,
// in order: avx512_16x16 moves 16 x 16 tiles through registers (masked at the edges), avx2_8x8
// 8 x 8 tiles (the ragged edges element by element), portable walks cache-sized tiles.
#pragma once
#include <cstdint>

#include "kernels/impl_list.h"

namespace rudra::kernels {

using TransposeFn = void (*)(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst);

// The first implementation the gate allows (every one takes every shape).
TransposeFn choose_transpose(const IsaGate& gate, ImplChoice* choice = nullptr);
// The implementations the gate allows, in order, and why the others are not (for listings).
std::string transpose_impls(const IsaGate& gate);
// With the process's choice (choose_transpose(isa_gate()), made once).
void transpose(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst);

}  // namespace rudra::kernels
