// avx512_rows and avx2_rows: pooling a row kLanes outputs at a time, for any row width (narrow
// rows take avx512_narrow first where AVX-512 is allowed, kernels/pool_narrow.cpp). The body is
// written once (pool_rows_body.h) and compiled here once per level, inside the level's target
// region (kernels/simd/target_region.h).
#include <algorithm>
#include <string>

#include "kernels/pool_impls.h"
#include "kernels/simd/target_region.h"

#if defined(__x86_64__)
RUDRA_BEGIN_TARGET_AVX512
#include "kernels/simd/avx512.h"
namespace rudra::kernels::pool::rows512 {
using V = simd::Avx512;
#include "kernels/pool_rows_body.h"
}  // namespace rudra::kernels::pool::rows512
RUDRA_END_TARGET

RUDRA_BEGIN_TARGET_AVX2
#include "kernels/simd/avx2.h"
namespace rudra::kernels::pool::rows256 {
using V = simd::Avx2;
#include "kernels/pool_rows_body.h"
}  // namespace rudra::kernels::pool::rows256
RUDRA_END_TARGET
#endif

namespace rudra::kernels::pool {

#if defined(__x86_64__)

namespace {

std::string declines(const PoolGeometry& g) {
    if (g.stride_w != 1 && g.stride_w != 2) return "column stride " + std::to_string(g.stride_w) + ", not 1 or 2";
    if (g.kernel_w > rows512::kMaxVectorKernelW)
        return "kernel " + std::to_string(g.kernel_w) + " wide, above " + std::to_string(rows512::kMaxVectorKernelW);
    return "";
}

using PlaneFn = void (*)(const float*, const PoolGeometry&, float*, int32_t*);

// The plane loop, outside any target region: clang outlines an OpenMP region into a function of
// its own, without the enclosing function's target attribute.
template <PlaneFn Plane>
void over_planes(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        prefetch_ahead(x, in_plane, p, planes);
        Plane(x + p * in_plane, g, y + p * out_plane, argmax ? argmax + p * out_plane : nullptr);
    }
}

}  // namespace

Kind rows_avx512() {
    return Kind{over_planes<rows512::max_plane>, over_planes<rows512::avg_plane>, nullptr, nullptr, declines};
}
Kind rows_avx2() {
    return Kind{over_planes<rows256::max_plane>, over_planes<rows256::avg_plane>, nullptr, nullptr, declines};
}

#else

Kind rows_avx512() { return Kind{}; }
Kind rows_avx2() { return Kind{}; }

#endif

}  // namespace rudra::kernels::pool
