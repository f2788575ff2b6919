// POWER10 MMA micro-kernel: an 8 x 16 tile held in 8 4x4 accumulators, each step two rank-1
// outer products per accumulator column (xvf32gerpp). This file alone is compiled with
// -mcpu=power10 (CMake and Makefile.power do so on ppc64le), so that a POWER9 build still
// carries it; the dispatcher runs it only when the CPU reports MMA (AT_HWCAP2), since MMA
// instructions trap on POWER9.
#include "kernels/sgemm/micro_kernel.h"

#if defined(__powerpc64__)
namespace rudra::kernels {
// Read (as data, which any POWER can do) by mma_micro_kernel() in ukr_power.cpp.
extern const MicroKernelFn kMmaRun;
extern const MicroKernelIndirectFn kMmaIndirect;
extern const MicroKernelGatherAFn kMmaGather;
}  // namespace rudra::kernels
#endif

#if defined(__powerpc64__) && defined(__MMA__)
#include "kernels/simd/mma_tile.h"

namespace rudra::kernels {

constexpr int kMR = 8, kNR = 16;

// Called only through the MicroKernel in ukr_power.cpp; every other function here would carry
// POWER10 instructions (prefixed loads, pc-relative addresses) and trap on POWER9.
void run_mma_power10(int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c, float alpha,
             float beta) {
    mma::Tile acc;
    mma::clear(acc);
    for (int64_t p = 0; p < k; ++p, a += kMR, b += rs_b) {
        const __vector unsigned char a0 = (__vector unsigned char)vec_xl(0, a);
        const __vector unsigned char a1 = (__vector unsigned char)vec_xl(16, a);
        __vector unsigned char bq[4];
        for (int q = 0; q < 4; ++q) bq[q] = (__vector unsigned char)vec_xl(16 * q, b);
        for (int q = 0; q < 4; ++q) {
            __builtin_mma_xvf32gerpp(&acc[0][q], a0, bq[q]);
            __builtin_mma_xvf32gerpp(&acc[1][q], a1, bq[q]);
        }
    }
    mma::store(acc, c, rs_c, alpha, beta);
}

// The first `rows` rows of the 8 x 16 accumulators: C = acc (beta 0) or C + acc (beta 1).
static void store_rows(mma::Tile& acc, int rows, float* c, int64_t rs_c, float beta) {
    for (int r = 0; r < 2; ++r)
        for (int q = 0; q < 4; ++q) {
            __vector float tile[4];
            __builtin_mma_disassemble_acc(tile, &acc[r][q]);
            for (int i = 0; i < 4 && 4 * r + i < rows; ++i) {
                float* ci = c + (4 * r + i) * rs_c + 4 * q;
                vec_xst(beta != 0.0f ? vec_add(tile[i], vec_xl(0, ci)) : tile[i], 0, ci);
            }
        }
}

// The implicit convolution's indirect tile (micro_kernel.h): B rows in two pieces of 8 floats
// read at offsets; the whole 8-row tile is computed (the packed A panel is zero past the last
// row) and `rows` rows are stored, C = acc or C + acc.
void indirect_mma_power10(int rows, int parts, int64_t k, const float* a, const float* const* bases,
                          const int32_t* offsets, float* c, int64_t rs_c, float beta) {
    (void)parts;  // always 2
    mma::Tile acc;
    mma::clear(acc);
    const float *q0 = bases[0], *q1 = bases[1];
    for (int64_t p = 0; p < k; ++p, a += kMR) {
        const int32_t o = offsets[p];
        const __vector unsigned char a0 = (__vector unsigned char)vec_xl(0, a);
        const __vector unsigned char a1 = (__vector unsigned char)vec_xl(16, a);
        const __vector unsigned char bq[4] = {(__vector unsigned char)vec_xl(0, q0 + o),
                                              (__vector unsigned char)vec_xl(16, q0 + o),
                                              (__vector unsigned char)vec_xl(0, q1 + o),
                                              (__vector unsigned char)vec_xl(16, q1 + o)};
        for (int q = 0; q < 4; ++q) {
            __builtin_mma_xvf32gerpp(&acc[0][q], a0, bq[q]);
            __builtin_mma_xvf32gerpp(&acc[1][q], a1, bq[q]);
        }
    }
    store_rows(acc, rows, c, rs_c, beta);
}

// The implicit convolution's gather tile (micro_kernel.h): the 8 values of A of each step are
// gathered from the rows' runs into one column (zero past `rows`), B is the packed sliver.
void gather_a_mma_power10(int rows, int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets,
                          const float* b, float* c, int64_t rs_c, float beta) {
    mma::Tile acc;
    mma::clear(acc);
    alignas(16) float column[kMR] = {};
    for (int64_t s = 0; s < k / run; ++s) {
        const float* row[kMR];
        for (int i = 0; i < rows; ++i) row[i] = a_rows[i] + run_offsets[s];
        for (int64_t p = 0; p < run; ++p, b += kNR) {
            for (int i = 0; i < rows; ++i) column[i] = row[i][p];
            const __vector unsigned char a0 = (__vector unsigned char)vec_xl(0, column);
            const __vector unsigned char a1 = (__vector unsigned char)vec_xl(16, column);
            for (int q = 0; q < 4; ++q) {
                const __vector unsigned char bq = (__vector unsigned char)vec_xl(16 * q, b);
                __builtin_mma_xvf32gerpp(&acc[0][q], a0, bq);
                __builtin_mma_xvf32gerpp(&acc[1][q], a1, bq);
            }
        }
    }
    store_rows(acc, rows, c, rs_c, beta);
}

const MicroKernelFn kMmaRun = run_mma_power10;
const MicroKernelIndirectFn kMmaIndirect = indirect_mma_power10;
const MicroKernelGatherAFn kMmaGather = gather_a_mma_power10;

}  // namespace rudra::kernels

#elif defined(__powerpc64__)

namespace rudra::kernels {
const MicroKernelFn kMmaRun = nullptr;  // the compiler cannot target POWER10
const MicroKernelIndirectFn kMmaIndirect = nullptr;
const MicroKernelGatherAFn kMmaGather = nullptr;
}  // namespace rudra::kernels

#endif
