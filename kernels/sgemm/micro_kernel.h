// The per-ISA part of the packed SGEMM: one register-blocked micro-kernel and the cache block
// sizes that suit it. Everything else (packing, the five loops around the micro-kernel, edge
// tiles, threads) is written once in sgemm.cpp.
#pragma once
#include <cstdint>

#include "kernels/isa.h"

namespace rudra::kernels {

// C[0:mr, 0:nr] = alpha * sum_p A[:, p] (x) B[p, :] + beta * C   (row-major C, row stride rs_c)
//   a: packed A micro-panel, mr values per p (column p of the mr x k sliver)
//   b: B sliver, nr values per p, consecutive p's rs_b floats apart (nr when packed; the
//      matrix's row stride when B is read in place)
// beta == 0 never reads C (it may hold NaN). Always the full mr x nr tile.
using MicroKernelFn = void (*)(int64_t k, const float* a, const float* b, int64_t rs_b, float* c,
                               int64_t rs_c, float alpha, float beta);

// An edge tile, rows <= mr and cols <= nr, written straight into C (same a, b and beta rules;
// b still holds nr readable values per p). Kernels without one get the full tile computed into
// a buffer and the valid part copied out.
using MicroKernelEdgeFn = void (*)(int rows, int cols, int64_t k, const float* a, const float* b, int64_t rs_b,
                                   float* c, int64_t rs_c, float alpha, float beta);

// A tile whose B rows are read in place at offsets: row p's nr lanes come in `parts` equal
// pieces of at least 8 floats (parts = 2 or nr / 8), piece q from bases[q] + offsets[p] (alpha
// 1; beta 0 or 1). The implicit-GEMM convolution reads rows of a padded image this way instead
// of building im2col.
using MicroKernelIndirectFn = void (*)(int rows, int parts, int64_t k, const float* a, const float* const* bases,
                                       const int32_t* offsets, float* c, int64_t rs_c, float beta);

// A tile whose A values are gathered in runs of `run` consecutive values:
// A(i, p) = a_rows[i][run_offsets[p / run] + p % run] (k a multiple of run), B packed (nr per p),
// C accumulated (beta 0 or 1). The implicit backward-weights convolution reads the padded image
// this way (rows: kernel taps, p: output pixels, a run: one output row). Within a run the
// addresses follow from p alone; an offset loaded per p had put a load in front of every
// step's broadcasts and cost 6% of the speed.
using MicroKernelGatherAFn = void (*)(int rows, int64_t k, int64_t run, const float* const* a_rows,
                                      const int32_t* run_offsets, const float* b, float* c, int64_t rs_c, float beta);

struct MicroKernel {
    const char* name;  // "avx512", "avx2", "vsx", "mma", "reference"
    Isa isa;           // the instruction-set level it is written for (the gate must allow it)
    int mr, nr;        // register tile
    int mc, kc, nc;    // cache blocks: A block mc x kc (L2), B sliver kc x nr (L1), B panel kc x nc
    MicroKernelFn run;
    MicroKernelEdgeFn edge;  // may be nullptr
    MicroKernelIndirectFn indirect;  // may be nullptr
    MicroKernelGatherAFn gather_a;   // may be nullptr
    // B is read in place (not packed) only when its rows are at most this many floats apart; 0:
    // any distance. The AVX2 kernel reads one cache line per row: with rows a page apart, every
    // step's line is on a page of its own and the prefetchers did not follow (cifar10_full
    // conv1's forward GEMM, m32 n1024 k75, ran at 63 GFLOP/s in place, 92 packed); the AVX-512
    // kernel's two lines per row ran at 234 in place and 185 packed.
    int64_t in_place_max_ldb = 0;
};

// Each returns its kernel, or nullptr when this build does not contain it (wrong architecture).
// Whether it may run is the ISA gate's decision (kernels/isa.h, sgemm_dispatch.cpp).
const MicroKernel* reference_micro_kernel();
const MicroKernel* avx2_micro_kernel();
const MicroKernel* avx512_micro_kernel();
const MicroKernel* vsx_micro_kernel();
const MicroKernel* mma_micro_kernel();

}  // namespace rudra::kernels
