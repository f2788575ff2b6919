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

constexpr MicroKernel kVsx{"vsx", "POWER VSX", kMR, kNR, 256, 256, 4096, run_vsx, nullptr, nullptr, nullptr};

}  // namespace

// The MMA kernel's function, or null when the compiler could not target POWER10
// (ukr_power_mma.cpp). A data object: reading it runs no POWER10 instruction.
extern const MicroKernelFn kMmaRun;

const MicroKernel* vsx_micro_kernel() { return &kVsx; }
const MicroKernel* mma_micro_kernel() {
    static const MicroKernel mma{"mma", "POWER10 MMA", kMR, kNR, 256, 256, 4096, kMmaRun, nullptr, nullptr, nullptr};
    return kMmaRun ? &mma : nullptr;
}

}  // namespace rudra::kernels

#else

namespace rudra::kernels {
const MicroKernel* vsx_micro_kernel() { return nullptr; }
const MicroKernel* mma_micro_kernel() { return nullptr; }
}  // namespace rudra::kernels

#endif
