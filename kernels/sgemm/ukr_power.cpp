// POWER VSX micro-kernel (ppc64le, POWER8 and later, tuned for POWER9): an 8 x 16 tile in 32 of
// the 64 vector-scalar registers. The POWER10 MMA kernel is in ukr_power_mma.cpp.
#include "kernels/sgemm/micro_kernel.h"

#if defined(__powerpc64__) && defined(__VSX__)
#include <altivec.h>

namespace rudra::kernels {
namespace {

constexpr int kMR = 8, kNR = 16;

void run_vsx(int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c, float alpha,
             float beta) {
    __vector float acc[kMR][4];
#pragma GCC unroll 8
    for (int i = 0; i < kMR; ++i)
        for (int q = 0; q < 4; ++q) acc[i][q] = vec_splats(0.0f);
    for (int64_t p = 0; p < k; ++p, a += kMR, b += rs_b) {
        const __vector float b0 = vec_xl(0, b), b1 = vec_xl(16, b), b2 = vec_xl(32, b), b3 = vec_xl(48, b);
#pragma GCC unroll 8
        for (int i = 0; i < kMR; ++i) {
            const __vector float ai = vec_splats(a[i]);
            acc[i][0] = vec_madd(ai, b0, acc[i][0]);
            acc[i][1] = vec_madd(ai, b1, acc[i][1]);
            acc[i][2] = vec_madd(ai, b2, acc[i][2]);
            acc[i][3] = vec_madd(ai, b3, acc[i][3]);
        }
    }
    const __vector float va = vec_splats(alpha), vb = vec_splats(beta);
    for (int i = 0; i < kMR; ++i, c += rs_c)
        for (int q = 0; q < 4; ++q) {
            __vector float r = vec_mul(va, acc[i][q]);
            if (beta != 0.0f) r = vec_madd(vb, vec_xl(16 * q, c), r);
            vec_xst(r, 16 * q, c);
        }
}

// The implicit convolution's tiles (see micro_kernel.h): ROWS x 16 accumulators, C = acc or
// C + acc. Indirect: B rows in two pieces of 8 floats. Gather: A values from row pointers.
template <int ROWS>
inline void store_tile(__vector float (&acc)[ROWS][4], float* c, int64_t rs_c, float beta) {
    for (int i = 0; i < ROWS; ++i, c += rs_c)
        for (int q = 0; q < 4; ++q) {
            __vector float r = acc[i][q];
            if (beta != 0.0f) r = vec_add(r, vec_xl(16 * q, c));
            vec_xst(r, 16 * q, c);
        }
}

template <int ROWS>
inline void rank1(__vector float (&acc)[ROWS][4], const float* a_col, const __vector float (&b)[4]) {
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i) {
        const __vector float ai = vec_splats(a_col[i]);
        for (int q = 0; q < 4; ++q) acc[i][q] = vec_madd(ai, b[q], acc[i][q]);
    }
}

template <int ROWS>
void indirect_vsx_rows(int64_t k, const float* a, const float* const* bases, const int32_t* offsets, float* c,
                       int64_t rs_c, float beta) {
    __vector float acc[ROWS][4];
    for (int i = 0; i < ROWS; ++i)
        for (int q = 0; q < 4; ++q) acc[i][q] = vec_splats(0.0f);
    const float *q0 = bases[0], *q1 = bases[1];
    for (int64_t p = 0; p < k; ++p, a += kMR) {
        const int32_t o = offsets[p];
        const __vector float b[4] = {vec_xl(0, q0 + o), vec_xl(16, q0 + o), vec_xl(0, q1 + o), vec_xl(16, q1 + o)};
        rank1<ROWS>(acc, a, b);
    }
    store_tile<ROWS>(acc, c, rs_c, beta);
}

template <int ROWS>
void gather_a_vsx_rows(int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets, const float* b,
                       float* c, int64_t rs_c, float beta) {
    __vector float acc[ROWS][4];
    for (int i = 0; i < ROWS; ++i)
        for (int q = 0; q < 4; ++q) acc[i][q] = vec_splats(0.0f);
    float a_col[ROWS];
    for (int64_t s = 0; s < k / run; ++s) {
        const float* rows[ROWS];
        for (int i = 0; i < ROWS; ++i) rows[i] = a_rows[i] + run_offsets[s];
        for (int64_t p = 0; p < run; ++p, b += kNR) {
            for (int i = 0; i < ROWS; ++i) a_col[i] = rows[i][p];
            const __vector float bv[4] = {vec_xl(0, b), vec_xl(16, b), vec_xl(32, b), vec_xl(48, b)};
            rank1<ROWS>(acc, a_col, bv);
        }
    }
    store_tile<ROWS>(acc, c, rs_c, beta);
}

void indirect_vsx(int rows, int parts, int64_t k, const float* a, const float* const* bases, const int32_t* offsets,
                  float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, const float*, const float* const*, const int32_t*, float*, int64_t, float);
    static constexpr Fn kByRows[kMR + 1] = {nullptr,
                                           indirect_vsx_rows<1>,
                                           indirect_vsx_rows<2>,
                                           indirect_vsx_rows<3>,
                                           indirect_vsx_rows<4>,
                                           indirect_vsx_rows<5>,
                                           indirect_vsx_rows<6>,
                                           indirect_vsx_rows<7>,
                                           indirect_vsx_rows<8>};
    (void)parts;  // always 2: pieces of 8 floats
    kByRows[rows](k, a, bases, offsets, c, rs_c, beta);
}

void gather_a_vsx(int rows, int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets,
                  const float* b, float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, int64_t, const float* const*, const int32_t*, const float*, float*, int64_t, float);
    static constexpr Fn kByRows[kMR + 1] = {nullptr,
                                           gather_a_vsx_rows<1>,
                                           gather_a_vsx_rows<2>,
                                           gather_a_vsx_rows<3>,
                                           gather_a_vsx_rows<4>,
                                           gather_a_vsx_rows<5>,
                                           gather_a_vsx_rows<6>,
                                           gather_a_vsx_rows<7>,
                                           gather_a_vsx_rows<8>};
    kByRows[rows](k, run, a_rows, run_offsets, b, c, rs_c, beta);
}

constexpr MicroKernel kVsx{"vsx", Isa::Vsx, kMR, kNR, 256, 256, 4096, run_vsx, nullptr, indirect_vsx, gather_a_vsx};

}  // namespace

// The MMA kernel's function, or null when the compiler could not target POWER10
// (ukr_power_mma.cpp). A data object: reading it runs no POWER10 instruction.
extern const MicroKernelFn kMmaRun;
extern const MicroKernelIndirectFn kMmaIndirect;
extern const MicroKernelGatherAFn kMmaGather;

const MicroKernel* vsx_micro_kernel() { return &kVsx; }
const MicroKernel* mma_micro_kernel() {
    static const MicroKernel mma{"mma", Isa::Mma, kMR, kNR, 256, 256, 4096, kMmaRun, nullptr, kMmaIndirect,
                                 kMmaGather};
    return kMmaRun ? &mma : nullptr;
}

}  // namespace rudra::kernels

#else

namespace rudra::kernels {
const MicroKernel* vsx_micro_kernel() { return nullptr; }
const MicroKernel* mma_micro_kernel() { return nullptr; }
}  // namespace rudra::kernels

#endif
