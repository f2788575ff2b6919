// The POWER10 BF16 kernel's description, compiled for the POWER8 baseline (its run function is in
// ukr_bf16_power_mma.cpp, the one file built for POWER10); packing is the portable code's.
#include "kernels/bf16/bgemm.h"

#if defined(__powerpc64__)
namespace rudra::kernels {

using Bf16RunFn = void (*)(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha,
                           float beta);
extern const Bf16RunFn kBf16MmaRun;

const Bf16MicroKernel* mma_bf16_micro_kernel() {
    static const Bf16MicroKernel mma{"mma",   Isa::Mma, 8, 16, 128, 512, 4096, kBf16MmaRun, nullptr,
                                     pair_rows_portable, round_row_portable, pair_runs_portable, round_runs_portable, nullptr};
    return kBf16MmaRun ? &mma : nullptr;
}

}  // namespace rudra::kernels
#else
namespace rudra::kernels {
const Bf16MicroKernel* mma_bf16_micro_kernel() { return nullptr; }
}  // namespace rudra::kernels
#endif
