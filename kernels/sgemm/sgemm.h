// The engine's own packed SGEMM, written the BLIS way: A and B are packed into cache-sized
// blocks, five loops walk the blocks, and a per-ISA micro-kernel computes one register tile.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/sgemm/micro_kernel.h"

namespace rudra::kernels {

// Row-major C[m,n] = alpha * op(A) op(B) + beta * C with the given micro-kernel, on up to
// `threads` OpenMP threads (0: all; inside a parallel region always 1). Fewer threads are used
// when the problem is too small to pay for them.
void sgemm_packed(const MicroKernel& kernel, Trans ta, Trans tb, int m, int n, int k, float alpha,
                  const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc,
                  int threads);

// The same with B given as the kernel's packed slivers over the whole of k: column j of B is
// lane j % nr of sliver j / nr, B(p, j) = b[(j / nr) * k * nr + p * nr + j % nr], lanes past n
// zero (see kernels/conv_geometry.h im2col_slivers). `kernel` must be the one whose nr wrote it.
void sgemm_packed_b_slivers(const MicroKernel& kernel, Trans ta, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, float beta, float* c, int ldc, int threads);

// The depth of the k-blocks the loops (and pack_a_matrix's layout) use for a product of depth k:
// the kernel's kc, or all of k when that is at most a quarter more. A short last block loads and
// stores every C tile once more for a few steps: cifar10_full conv3's forward GEMM (m64 n64
// k800) on the AVX2 kernel (kc 768) ran at 137 GFLOP/s on 2 threads in blocks of 768 + 32,
// 172 in one block.
int k_block(const MicroKernel& kernel, int k);

// A packed once and used for many products (a convolution's weights, for every image):
// pack_a_matrix writes op(A) (m x k) into packed_a_floats(m, k) floats in the layout the loops
// read, and sgemm_prepacked_a multiplies it; `kernel` must be the same for both.
size_t packed_a_floats(const MicroKernel& kernel, int m, int k);
void pack_a_matrix(const MicroKernel& kernel, Trans ta, int m, int k, const float* a, int lda, float* out);
void sgemm_prepacked_a(const MicroKernel& kernel, int m, int n, int k, float alpha, const float* packed_a, Trans tb,
                       const float* b, int ldb, float beta, float* c, int ldc, int threads);

// Kernels in this build that the gate allows, fastest first.
std::vector<const MicroKernel*> runnable_micro_kernels(const IsaGate& gate = isa_gate());

struct KernelChoice {
    MicroKernel kernel;  // block sizes for the CPU family, or as RUDRA_SGEMM_BLOCKS says
    std::string reason;  // "first choice", or why the faster kernels were passed over
};
// The fastest kernel the gate allows, with the cache blocks for the gate's CPU.
KernelChoice choose_micro_kernel(const IsaGate& gate);
// The process's choice, made once on first use from isa_gate(); RUDRA_SGEMM_BLOCKS=mc,kc,nc
// replaces its cache block sizes (for tuning on a new machine). With RUDRA_VERBOSE=1 the choice,
// its block sizes and the reason are printed to stderr. A malformed RUDRA_SGEMM_BLOCKS, a bad
// RUDRA_ISA, or the retired RUDRA_SGEMM_KERNEL throw std::invalid_argument at every call.
const KernelChoice& selected_micro_kernel();
// selected_micro_kernel() for the process's gate, choose_micro_kernel(gate) for any other.
KernelChoice micro_kernel_for(const IsaGate& gate);

}  // namespace rudra::kernels
