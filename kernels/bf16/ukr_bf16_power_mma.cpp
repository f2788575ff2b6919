// The POWER10 MMA BF16 micro-kernel: an 8 x 16 tile in 8 4x4 accumulators, each step one rank-2
// update per accumulator (xvbf16ger2pp: two BF16 products per element, summed in FP32), on the
// same pair words as the x86 kernel. Like kernels/sgemm/ukr_power_mma.cpp this file alone is
// compiled with -mcpu=power10, and the kernel is reached only through the gate, on a CPU with MMA.
#include <cstdint>

#if defined(__powerpc64__)
namespace rudra::kernels {
using Bf16RunFn = void (*)(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha,
                           float beta);
extern const Bf16RunFn kBf16MmaRun;  // read by mma_bf16_micro_kernel() in ukr_bf16_power.cpp
}  // namespace rudra::kernels
#endif

#if defined(__powerpc64__) && defined(__MMA__)
#include "kernels/simd/mma_tile.h"

namespace rudra::kernels {

void run_bf16_mma_power10(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha,
                          float beta) {
    mma::Tile acc;
    mma::clear(acc);
    for (int64_t s = 0; s < kp; ++s, a += 8, b += 16) {
        const __vector unsigned char a0 = (__vector unsigned char)vec_xl(0, a);
        const __vector unsigned char a1 = (__vector unsigned char)vec_xl(16, a);
        __vector unsigned char bq[4];
        for (int q = 0; q < 4; ++q) bq[q] = (__vector unsigned char)vec_xl(16 * q, b);
        for (int q = 0; q < 4; ++q) {
            __builtin_mma_xvbf16ger2pp(&acc[0][q], a0, bq[q]);
            __builtin_mma_xvbf16ger2pp(&acc[1][q], a1, bq[q]);
        }
    }
    mma::store(acc, c, rs_c, alpha, beta);
}

const Bf16RunFn kBf16MmaRun = run_bf16_mma_power10;

}  // namespace rudra::kernels

#elif defined(__powerpc64__)

namespace rudra::kernels {
const Bf16RunFn kBf16MmaRun = nullptr;  // the compiler cannot target POWER10
}  // namespace rudra::kernels

#endif
