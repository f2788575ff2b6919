// The 8 x 16 tile of the POWER10 MMA micro-kernels (kernels/sgemm/ukr_power_mma.cpp, FP32 outer
// products; kernels/bf16/ukr_bf16_power_mma.cpp, BF16 ones): two rows of four 4x4 accumulators,
// and C = alpha acc + beta C written from them. Included only by files compiled for POWER10.
#pragma once
#if defined(__powerpc64__) && defined(__MMA__)
#include <altivec.h>

#include <cstdint>

namespace rudra::kernels::mma {

using Tile = __vector_quad[2][4];

inline void clear(Tile& acc) {
    for (int r = 0; r < 2; ++r)
        for (int q = 0; q < 4; ++q) __builtin_mma_xxsetaccz(&acc[r][q]);
}

// C[0:8, 0:16] = alpha acc + beta C (beta 0: C is not read).
inline void store(Tile& acc, float* c, int64_t rs_c, float alpha, float beta) {
    const __vector float va = vec_splats(alpha), vb = vec_splats(beta);
    for (int r = 0; r < 2; ++r)
        for (int q = 0; q < 4; ++q) {
            __vector float rows[4];
            __builtin_mma_disassemble_acc(rows, &acc[r][q]);
            for (int i = 0; i < 4; ++i) {
                float* ci = c + (4 * r + i) * rs_c + 4 * q;
                __vector float v = vec_mul(va, rows[i]);
                if (beta != 0.0f) v = vec_madd(vb, vec_xl(0, ci), v);
                vec_xst(v, 0, ci);
            }
        }
}

}  // namespace rudra::kernels::mma
#endif
