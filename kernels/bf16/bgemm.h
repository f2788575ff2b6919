// Mixed-precision GEMM: C = alpha op(A) op(B) + beta C with FP32 matrices in and out, op(A) and
// op(B) rounded to BF16 as they are packed and every product summed in FP32. Written the BLIS way
// like the SGEMM (kernels/sgemm): A and B are packed into cache-sized blocks of BF16 pair words
// (two consecutive k of one row of A or column of B in 32 bits, the layout of VDPBF16PS and of
// POWER10's xvbf16ger2), and a per-ISA micro-kernel computes one register tile.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/isa.h"

namespace rudra::kernels {

struct Bf16MicroKernel {
    const char* name;  // "avx512_bf16", "reference"
    Isa isa;           // the level it is written for
    int mr, nr;        // register tile
    int mc, kc, nc;    // cache blocks (kc in k, even)
    // C[0:mr, 0:nr] = alpha sum_q A[:, q] (.) B[q, :] + beta C over kp pair steps: a holds mr
    // pair words per step, b nr; beta == 0 never reads C.
    void (*run)(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha, float beta);
    // An edge tile, rows <= mr and cols <= nr, written straight into C (nullptr: the loops compute
    // the full tile into a buffer and copy the valid part).
    void (*edge)(int rows, int cols, int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c,
                 float alpha, float beta);
    // dst[l] = (bf16(r0[l]), bf16(r1[l])) for l < count, zero words up to width; r1 nullptr:
    // zero high halves (an odd k's last step).
    void (*pair_rows)(const float* r0, const float* r1, int count, int width, uint32_t* dst);
    // out[i] = bf16(x[i]), i < n: n consecutive k of one lane are n / 2 pair words.
    void (*round_row)(const float* x, uint16_t* out, size_t n);
    // The pair words of two rows that lie in `runs` runs of run_len floats, run_stride apart (r1
    // nullptr: zero high halves), written as B slivers of `width` lanes: value p = y run_len + x,
    // (r0[y run_stride + x], r1[y run_stride + x]), to dst[(p / width) sliver_words + p % width],
    // and the lanes of the last sliver past the rows' end zeroed. An im2col row's runs are the
    // image rows its output rows read, so the column matrix is never written in FP32.
    void (*pair_runs)(const float* r0, const float* r1, int64_t run_stride, int runs, int run_len, int width,
                      int64_t sliver_words, uint32_t* dst);
    // out[y run_len + x] = bf16(src[y run_stride + x]), y < runs, x < run_len: an im2col row
    // rounded straight from the image rows it reads.
    void (*round_runs)(const float* src, int64_t run_stride, int runs, int run_len, uint16_t* out);
    // A sliver of lanes whose k are consecutive in memory (A not transposed, B transposed): lane
    // l < count is src[l ld + p], p < kc; dst gets (kc + 1) / 2 steps of `width` pair words, zero
    // past count (and a zero high half after an odd kc). nullptr: rounded rows transposed by the
    // loops (kernels/transpose).
    void (*pack_lanes)(const float* src, int64_t ld, int count, int width, int kc, uint32_t* dst);
};

const Bf16MicroKernel* reference_bf16_micro_kernel();
const Bf16MicroKernel* avx512_bf16_micro_kernel();  // nullptr off x86-64
const Bf16MicroKernel* mma_bf16_micro_kernel();     // nullptr off ppc64le, or where the compiler lacks POWER10
// The portable packing, for kernels without vector code of their own for it.
void pair_rows_portable(const float* r0, const float* r1, int count, int width, uint32_t* dst);
void round_row_portable(const float* x, uint16_t* out, size_t n);
void round_runs_portable(const float* src, int64_t run_stride, int runs, int run_len, uint16_t* out);
void pair_runs_portable(const float* r0, const float* r1, int64_t run_stride, int runs, int run_len, int width,
                        int64_t sliver_words, uint32_t* dst);

// Kernels of this build that the gate allows, fastest first (the reference one always).
std::vector<const Bf16MicroKernel*> runnable_bf16_micro_kernels(const IsaGate& gate = isa_gate());
// The process's choice, made once, and why the faster ones were passed over.
const Bf16MicroKernel& selected_bf16_micro_kernel();
std::string bf16_micro_kernel_choice();  // "avx512_bf16" or "reference (avx512_bf16: needs ...)"

// threads as for sgemm: 0 all OpenMP threads, 1 inside a layer's own parallel region.
void gemm_bf16(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc, int threads = 1);
void gemm_bf16_with(const Bf16MicroKernel& kernel, Trans ta, Trans tb, int m, int n, int k, float alpha,
                    const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc, int threads);

// A rounded and packed once for many products (a convolution's weights, for every image):
// pack_bf16_a writes op(A) (m x k) into bf16_packed_a_words(kernel, m, k) pair words in the layout
// the loops read, and gemm_bf16_prepacked_a multiplies it; `kernel` must be the same for both.
size_t bf16_packed_a_words(const Bf16MicroKernel& kernel, int m, int k);
void pack_bf16_a(const Bf16MicroKernel& kernel, Trans ta, int m, int k, const float* a, int lda, uint32_t* out);
void gemm_bf16_prepacked_a(const Bf16MicroKernel& kernel, int m, int n, int k, float alpha, const uint32_t* packed_a,
                           Trans tb, const float* b, int ldb, float beta, float* c, int ldc, int threads);
// B given as slivers over the whole of k, A as for gemm_bf16 (op(A) rounded as it is packed).
void gemm_bf16_b_slivers(const Bf16MicroKernel& kernel, Trans ta, int m, int n, int k, float alpha, const float* a,
                         int lda, const uint32_t* b_slivers, float beta, float* c, int ldc, int threads);
// Both packed: A by pack_bf16_a, B as the kernel's slivers over the whole of k (sliver j / nr
// holds (k + 1) / 2 steps of nr pair words: kernels/conv_geometry.h im2col_bf16_slivers).
void gemm_bf16_prepacked(const Bf16MicroKernel& kernel, int m, int n, int k, float alpha, const uint32_t* packed_a,
                         const uint32_t* b_slivers, float beta, float* c, int ldc, int threads);

}  // namespace rudra::kernels
