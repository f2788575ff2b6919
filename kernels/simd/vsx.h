// Vector traits of POWER's VSX (4 floats in a 128-bit register; POWER8 and later), the operations
// a GEMM tile needs, meaning what kernels/simd/avx512.h says they mean. The baseline of a ppc64le
// build has VSX, so no target region is needed: include it where __VSX__ is defined.
#pragma once
#include <altivec.h>

#include "kernels/simd/target_region.h"

namespace rudra::kernels::simd {

struct Vsx {
    static constexpr int kLanes = 4;
    static constexpr const char* kName = "vsx";
    using F = __vector float;

    RUDRA_SIMD F zero() { return vec_splats(0.0f); }
    RUDRA_SIMD F set1(float v) { return vec_splats(v); }
    RUDRA_SIMD F broadcast(const float* p) { return vec_splats(*p); }
    RUDRA_SIMD F load(const float* p) { return vec_xl(0, p); }
    RUDRA_SIMD void store(float* p, F v) { vec_xst(v, 0, p); }
    RUDRA_SIMD F add(F a, F b) { return vec_add(a, b); }
    RUDRA_SIMD F mul(F a, F b) { return vec_mul(a, b); }
    RUDRA_SIMD F fma(F a, F b, F c) { return vec_madd(a, b, c); }
};

}  // namespace rudra::kernels::simd
