// POWER VSX micro-kernel (ppc64le, POWER8 and later, tuned for POWER9): an 8 x 16 tile in 32 of
// the 64 vector-scalar registers, written on the VSX vector traits (kernels/simd/vsx.h). The
// POWER10 MMA kernel is in ukr_power_mma.cpp.
#include "kernels/sgemm/micro_kernel.h"

#if defined(__powerpc64__) && defined(__VSX__)
#include "kernels/simd/vsx.h"

namespace rudra::kernels {
namespace {

using V = simd::Vsx;
using F = V::F;
constexpr int kMR = 8, kNR = 16, kNV = kNR / V::kLanes;  // a row of the tile: 4 vectors

// acc[i] = 0, and C = acc or C + acc (C's rows rs_c apart).
template <int ROWS>
inline void clear(F (&acc)[ROWS][kNV]) {
    for (int i = 0; i < ROWS; ++i)
        for (int q = 0; q < kNV; ++q) acc[i][q] = V::zero();
}

template <int ROWS>
inline void store_tile(F (&acc)[ROWS][kNV], float* c, int64_t rs_c, float beta) {
    for (int i = 0; i < ROWS; ++i, c += rs_c)
        for (int q = 0; q < kNV; ++q) {
            F r = acc[i][q];
            if (beta != 0.0f) r = V::add(r, V::load(c + q * V::kLanes));
            V::store(c + q * V::kLanes, r);
        }
}

// acc += a_col[i] (x) b for the ROWS rows.
template <int ROWS>
inline void rank1(F (&acc)[ROWS][kNV], const float* a_col, const F (&b)[kNV]) {
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; ++i) {
        const F ai = V::broadcast(a_col + i);
        for (int q = 0; q < kNV; ++q) acc[i][q] = V::fma(ai, b[q], acc[i][q]);
    }
}

inline void load_row(F (&b)[kNV], const float* p) {
    for (int q = 0; q < kNV; ++q) b[q] = V::load(p + q * V::kLanes);
}

void run_vsx(int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c, float alpha,
             float beta) {
    F acc[kMR][kNV];
    clear<kMR>(acc);
    F bv[kNV];
    for (int64_t p = 0; p < k; ++p, a += kMR, b += rs_b) {
        load_row(bv, b);
        rank1<kMR>(acc, a, bv);
    }
    const F va = V::set1(alpha), vb = V::set1(beta);
    for (int i = 0; i < kMR; ++i, c += rs_c)
        for (int q = 0; q < kNV; ++q) {
            F r = V::mul(va, acc[i][q]);
            if (beta != 0.0f) r = V::fma(vb, V::load(c + q * V::kLanes), r);
            V::store(c + q * V::kLanes, r);
        }
}

// The implicit convolution's tiles (see micro_kernel.h): ROWS x 16 accumulators, C = acc or
// C + acc. Indirect: B rows in two pieces of 8 floats. Gather: A values from row pointers.
template <int ROWS>
void indirect_vsx_rows(int64_t k, const float* a, const float* const* bases, const int32_t* offsets, float* c,
                       int64_t rs_c, float beta) {
    F acc[ROWS][kNV];
    clear<ROWS>(acc);
    const float *q0 = bases[0], *q1 = bases[1];
    for (int64_t p = 0; p < k; ++p, a += kMR) {
        const int32_t o = offsets[p];
        const F b[kNV] = {V::load(q0 + o), V::load(q0 + o + 4), V::load(q1 + o), V::load(q1 + o + 4)};
        rank1<ROWS>(acc, a, b);
    }
    store_tile<ROWS>(acc, c, rs_c, beta);
}

template <int ROWS>
void gather_a_vsx_rows(int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets, const float* b,
                       float* c, int64_t rs_c, float beta) {
    F acc[ROWS][kNV];
    clear<ROWS>(acc);
    float a_col[ROWS];
    F bv[kNV];
    for (int64_t s = 0; s < k / run; ++s) {
        const float* rows[ROWS];
        for (int i = 0; i < ROWS; ++i) rows[i] = a_rows[i] + run_offsets[s];
        for (int64_t p = 0; p < run; ++p, b += kNR) {
            for (int i = 0; i < ROWS; ++i) a_col[i] = rows[i][p];
            load_row(bv, b);
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
