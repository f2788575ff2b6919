// The AVX512-BF16 micro-kernel (12 x 32: 24 of the 32 registers accumulate, as in the FP32
// AVX-512 kernel, but every instruction does two multiply-adds per lane), its packing of FP32
// rows into pair words, and the whole-array conversions.
#include <algorithm>

#include "kernels/bf16/bf16.h"
#include "kernels/bf16/bgemm.h"
#include "kernels/simd/target_region.h"

#if defined(__x86_64__)
RUDRA_BEGIN_TARGET_AVX512_BF16
#include "kernels/simd/avx512_bf16.h"
namespace rudra::kernels::bf16x86 {
using V = simd::Avx512Bf16;
using F = V::F;
using I = V::I;
constexpr int MR = 12, NR = 32;

void run(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha, float beta) {
    F lo[MR], hi[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        lo[i] = hi[i] = V::zero();
        // C's rows arrive while the sums run: a tile takes half the time of an FP32 one, too
        // short to wait for rows from memory at the end.
        V::prefetch(c + i * rs_c);
        V::prefetch(c + i * rs_c + 16);
    }
    for (int64_t q = 0; q < kp; ++q, a += MR, b += NR) {
        const I b0 = V::load_words(b), b1 = V::load_words(b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            const I ai = V::broadcast_word(a + i);
            lo[i] = V::dot_pairs(lo[i], ai, b0);
            hi[i] = V::dot_pairs(hi[i], ai, b1);
        }
    }
    const F va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i, c += rs_c) {
        F r0 = V::mul(va, lo[i]), r1 = V::mul(va, hi[i]);
        if (beta != 0.0f) {
            r0 = V::fma(vb, V::load(c), r0);
            r1 = V::fma(vb, V::load(c + 16), r1);
        }
        V::store(c, r0);
        V::store(c + 16, r1);
    }
}

// An edge tile, rows <= R <= MR and cols <= NR, stored under masks; with at most 16 columns only
// the first vector of B is multiplied (the last sliver of a 13 x 13 image's 169 pixels holds 9),
// and only R of A's rows (cifar10_full's 32 output channels leave a panel of 8).
template <int NV, int R>
void edge_tile(int rows, int cols, int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c,
               float alpha, float beta) {
    F acc[R][NV];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
        for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
    for (int64_t q = 0; q < kp; ++q, a += MR, b += NR) {
        I bv[NV];
        for (int v = 0; v < NV; ++v) bv[v] = V::load_words(b + 16 * v);
#pragma GCC unroll 16
        for (int i = 0; i < R; ++i) {
            const I ai = V::broadcast_word(a + i);
            for (int v = 0; v < NV; ++v) acc[i][v] = V::dot_pairs(acc[i][v], ai, bv[v]);
        }
    }
    const F va = V::set1(alpha), vb = V::set1(beta);
    for (int i = 0; i < rows; ++i, c += rs_c)
        for (int v = 0; v < NV; ++v) {
            const auto m = V::first(cols - 16 * v);
            F r = V::mul(va, acc[i][v]);
            if (beta != 0.0f) r = V::fma(vb, V::load(m, c + 16 * v), r);
            V::store(c + 16 * v, m, r);
        }
}

template <int NV>
void edge_rows(int rows, int cols, int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c,
               float alpha, float beta) {
    if (rows <= 4)
        edge_tile<NV, 4>(rows, cols, kp, a, b, c, rs_c, alpha, beta);
    else if (rows <= 8)
        edge_tile<NV, 8>(rows, cols, kp, a, b, c, rs_c, alpha, beta);
    else
        edge_tile<NV, MR>(rows, cols, kp, a, b, c, rs_c, alpha, beta);
}

void edge(int rows, int cols, int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha,
          float beta) {
    if (cols <= 16)
        edge_rows<1>(rows, cols, kp, a, b, c, rs_c, alpha, beta);
    else
        edge_rows<2>(rows, cols, kp, a, b, c, rs_c, alpha, beta);
}

void pair_rows(const float* r0, const float* r1, int count, int width, uint32_t* dst) {
    for (int l = 0; l < width; l += 16) {
        const int n = count - l;
        if (n <= 0) {
            V::store_words(dst + l, V::first(width - l), V::set1i(0));
            continue;
        }
        const auto m = V::first(n);
        const F lo = V::load(m, r0 + l), hi = r1 ? V::load(m, r1 + l) : V::zero();
        V::store_words(dst + l, V::first(width - l), V::pair_words(lo, hi));
    }
}

void pair_runs(const float* r0, const float* r1, int64_t run_stride, int runs, int run_len, int width,
               int64_t sliver_words, uint32_t* dst) {
    uint32_t* sliver = dst;
    int lane = 0;
    for (int y = 0; y < runs; ++y) {
        const float *lo_row = r0 + y * run_stride, *hi_row = r1 ? r1 + y * run_stride : nullptr;
        for (int x = 0; x < run_len;) {
            const int n = std::min(std::min(16, run_len - x), width - lane);
            const auto m = V::first(n);
            const F lo = V::load(m, lo_row + x), hi = hi_row ? V::load(m, hi_row + x) : V::zero();
            V::store_words(sliver + lane, m, V::pair_words(lo, hi));
            x += n;
            lane += n;
            if (lane == width) {
                lane = 0;
                sliver += sliver_words;
            }
        }
    }
    for (; lane > 0 && lane < width; lane += 16) V::store_words(sliver + lane, V::first(width - lane), V::set1i(0));
}

void round_runs(const float* src, int64_t run_stride, int runs, int run_len, uint16_t* out) {
    for (int y = 0; y < runs; ++y, src += run_stride, out += run_len)
        for (int x = 0; x < run_len; x += 16) {
            const auto m = V::first(run_len - x);
            V::store_bf16(out + x, m, V::load(m, src + x));
        }
}

// 16 lanes by 32 k at a time: each lane's 32 values rounded into its 16 pair words in order
// (VCVTNE2PS2BF16), the 16 x 16 words transposed in registers so that each holds one step, and
// the steps stored: the rounded rows never pass through memory.
void pack_lanes(const float* src, int64_t ld, int count, int width, int kc, uint32_t* dst) {
    const int kp = (kc + 1) / 2;
    for (int l0 = 0; l0 < width; l0 += 16) {
        const int lanes = count - l0;
        const auto store_mask = V::first(width - l0);
        for (int s0 = 0; s0 < kp; s0 += 16) {
            const int left = kc - 2 * s0;
            const auto lo_mask = V::first(left), hi_mask = V::first(left - 16);
            F w[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) {
                if (i >= lanes) {
                    w[i] = V::zero();
                    continue;
                }
                const float* row = src + (l0 + i) * ld + 2 * s0;
                const F lo = V::load(lo_mask, row), hi = V::load(hi_mask, row + 16);
                w[i] = V::consecutive_pairs(lo, hi);
            }
            V::transpose(w);
            const int steps = std::min(16, kp - s0);
            float* out = reinterpret_cast<float*>(dst) + static_cast<int64_t>(s0) * width + l0;
            for (int j = 0; j < steps; ++j, out += width) V::store(out, store_mask, w[j]);
        }
    }
}

void to_bf16(const float* x, bf16* out, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) V::store_bf16(out + i, V::first(16), V::load(x + i));
    if (i < n) {
        const auto m = V::first(static_cast<int>(n - i));
        V::store_bf16(out + i, m, V::load(m, x + i));
    }
}

void from_bf16(const bf16* x, float* out, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) V::store(out + i, V::load_bf16(V::first(16), x + i));
    if (i < n) {
        const auto m = V::first(static_cast<int>(n - i));
        V::store(out + i, m, V::load_bf16(m, x + i));
    }
}

}  // namespace rudra::kernels::bf16x86
RUDRA_END_TARGET

namespace rudra::kernels {
namespace {
// Cache blocks as the FP32 kernel has on AMD cores: k-blocks of 1024 (a 64 KiB sliver of B,
// streamed from L2) update each C tile half as often as 512; on 2 Zen 5 cores, m = n = k = 2048
// ran at 681 GFLOP/s with mc 96 and kc 1024, 646 with mc 240 and kc 512.
constexpr Bf16MicroKernel kKernel{"avx512_bf16", Isa::Avx512Bf16, bf16x86::MR, bf16x86::NR, 96, 1024, 4096,
                                  bf16x86::run, bf16x86::edge, bf16x86::pair_rows, bf16x86::to_bf16,
                                  bf16x86::pair_runs, bf16x86::round_runs,
                                  bf16x86::pack_lanes};
constexpr Bf16Convert kConvert{"avx512_bf16", bf16x86::to_bf16, bf16x86::from_bf16};
}  // namespace

const Bf16MicroKernel* avx512_bf16_micro_kernel() { return &kKernel; }
const Bf16Convert* avx512_bf16_convert() { return &kConvert; }

}  // namespace rudra::kernels

#else

namespace rudra::kernels {
const Bf16MicroKernel* avx512_bf16_micro_kernel() { return nullptr; }
const Bf16Convert* avx512_bf16_convert() { return nullptr; }
}  // namespace rudra::kernels

#endif
