#include "kernels/transpose.h"

#include <algorithm>

#include "kernels/simd/target_region.h"

#if defined(__x86_64__)
RUDRA_BEGIN_TARGET_AVX512
#include "kernels/simd/avx512.h"
namespace rudra::kernels::transpose512 {
using V = simd::Avx512;
#include "kernels/transpose_body.h"
}  // namespace rudra::kernels::transpose512
RUDRA_END_TARGET

RUDRA_BEGIN_TARGET_AVX2
#include "kernels/simd/avx2.h"
namespace rudra::kernels::transpose256 {
using V = simd::Avx2;
#include "kernels/transpose_body.h"
}  // namespace rudra::kernels::transpose256
RUDRA_END_TARGET
#endif

namespace rudra::kernels {
namespace {

void transpose_portable(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    // 16 x 16 tiles: the 16 source rows and 16 destination rows of a tile stay in L1.
    constexpr int kTile = 16;
    for (int r0 = 0; r0 < rows; r0 += kTile)
        for (int c0 = 0; c0 < cols; c0 += kTile) {
            const int r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
            for (int c = c0; c < c1; ++c)
                for (int r = r0; r < r1; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
        }
}

struct AnyShape {};
#if defined(__x86_64__)
constexpr TransposeFn kAvx512 = transpose512::transpose_tiles, kAvx2 = transpose256::transpose_tiles;
#else
constexpr TransposeFn kAvx512 = nullptr, kAvx2 = nullptr;
#endif
const Impl<AnyShape, TransposeFn> kTransposes[] = {
    {"avx512_16x16", Isa::Avx512, kAvx512},
    {"avx2_8x8", Isa::Avx2, kAvx2},
    {"portable", Isa::Reference, transpose_portable},
};

}  // namespace

TransposeFn choose_transpose(const IsaGate& gate, ImplChoice* choice) {
    ImplChoice local;
    return choose_impl(kTransposes, AnyShape{}, gate, choice ? *choice : local);
}

std::string transpose_impls(const IsaGate& gate) { return describe_impls(kTransposes, gate); }

void transpose(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    static const TransposeFn chosen = choose_transpose(isa_gate());
    chosen(src, rows, cols, ld_src, dst, ld_dst);
}

}  // namespace rudra::kernels
