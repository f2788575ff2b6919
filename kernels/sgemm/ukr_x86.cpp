// x86-64 micro-kernels: one body (ukr_x86_body.h) over vector traits, compiled here once per
// level inside that level's target region (kernels/simd/target_region.h), so this file builds
// for the x86-64 baseline and the ISA gate decides at run time which one runs.
#include <utility>

#include "kernels/sgemm/micro_kernel.h"
#include "kernels/simd/target_region.h"

#if defined(__x86_64__)
RUDRA_BEGIN_TARGET_AVX512
#include "kernels/simd/avx512.h"
namespace rudra::kernels::ukr512 {
using V = simd::Avx512;
constexpr int MR = 12, NR = 32;
#include "kernels/sgemm/ukr_x86_body.h"
}  // namespace rudra::kernels::ukr512
RUDRA_END_TARGET

RUDRA_BEGIN_TARGET_AVX2
#include "kernels/simd/avx2.h"
namespace rudra::kernels::ukr256 {
using V = simd::Avx2;
constexpr int MR = 6, NR = 16;
#include "kernels/sgemm/ukr_x86_body.h"
}  // namespace rudra::kernels::ukr256
RUDRA_END_TARGET

namespace rudra::kernels {
namespace {

// Block sizes: the kc x nr B sliver stays in L1 or L2, the mc x kc A block in L2, the kc x nc
// B panel in L3. AVX-512's were tuned with RUDRA_SGEMM_BLOCKS on a Sapphire Rapids core
// (kc 384 beat 128, 192 and 256 on 2048^3). AMD cores get longer k-blocks: blocks_for_cpu in
// sgemm_dispatch.cpp.
constexpr MicroKernel kAvx512{"avx512",       Isa::Avx512,     ukr512::MR,       ukr512::NR, 240, 384, 4096,
                              ukr512::run,    ukr512::edge,    ukr512::indirect, ukr512::gather_a};
constexpr MicroKernel kAvx2{"avx2",         Isa::Avx2,     ukr256::MR,       ukr256::NR,       144, 256, 4096,
                            ukr256::run,    ukr256::edge,  ukr256::indirect, ukr256::gather_a, 1023};

}  // namespace

const MicroKernel* avx512_micro_kernel() { return &kAvx512; }
const MicroKernel* avx2_micro_kernel() { return &kAvx2; }

}  // namespace rudra::kernels

#else

namespace rudra::kernels {
const MicroKernel* avx512_micro_kernel() { return nullptr; }
const MicroKernel* avx2_micro_kernel() { return nullptr; }
}  // namespace rudra::kernels

#endif
