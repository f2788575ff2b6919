#include "kernels/peak.h"

#include <omp.h>

#include <chrono>
#include <cstdint>

#if defined(__powerpc64__) && defined(__VSX__)
#include <altivec.h>
#endif

#include "kernels/simd/target_region.h"

namespace rudra::kernels::peak {
// Each loop returns the flops done in `reps` passes; the result is consumed through `sink` so the
// compiler cannot drop the work. 12 independent chains cover 4-cycle latency on 2-3 FMA ports.
constexpr int kChains = 12;
}  // namespace rudra::kernels::peak

#if defined(__x86_64__)
RUDRA_BEGIN_TARGET_AVX512
#include "kernels/simd/avx512.h"
namespace rudra::kernels::peak::avx512 {
using V = simd::Avx512;
#include "kernels/peak_body.h"
}  // namespace rudra::kernels::peak::avx512
RUDRA_END_TARGET

RUDRA_BEGIN_TARGET_AVX512_BF16
#include "kernels/simd/avx512_bf16.h"
namespace rudra::kernels::peak::avx512_bf16 {
using V = simd::Avx512Bf16;
// More chains than the FMA loop: a dot product's latency is longer.
constexpr int kDotChains = 24;

double dot_loop(int64_t reps, float* sink) {
    V::F acc[kDotChains];
    for (int i = 0; i < kDotChains; ++i) acc[i] = V::set1(0.001f * i);
    const V::I x = V::pair_words(V::set1(0.999f), V::set1(1e-3f)), y = V::pair_words(V::set1(1e-4f), V::set1(1e-4f));
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 24
        for (int i = 0; i < kDotChains; ++i) acc[i] = V::dot_pairs(acc[i], x, y);
    V::F s = acc[0];
    for (int i = 1; i < kDotChains; ++i) s = V::add(s, acc[i]);
    float out[V::kLanes];
    V::store(out, s);
    *sink = out[0] + out[V::kLanes - 1];
    return 2.0 * 2 * V::kLanes * kDotChains * static_cast<double>(reps);
}
}  // namespace rudra::kernels::peak::avx512_bf16
RUDRA_END_TARGET

RUDRA_BEGIN_TARGET_AVX2
#include "kernels/simd/avx2.h"
namespace rudra::kernels::peak::avx2 {
using V = simd::Avx2;
#include "kernels/peak_body.h"
}  // namespace rudra::kernels::peak::avx2
RUDRA_END_TARGET
#endif

namespace rudra::kernels {
namespace {

using peak::kChains;

#if defined(__powerpc64__) && defined(__VSX__)
double fma_vsx(int64_t reps, float* sink) {
    __vector float acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = vec_splats(0.001f * i);
    const __vector float x = vec_splats(0.999999f), y = vec_splats(1e-7f);
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = vec_madd(acc[i], x, y);
    __vector float s = acc[0];
    for (int i = 1; i < kChains; ++i) s = vec_add(s, acc[i]);
    *sink = s[0] + s[3];
    return 2.0 * 4 * kChains * static_cast<double>(reps);
}
#endif

double fma_scalar(int64_t reps, float* sink) {
    float acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = 0.001f * i;
    for (int64_t r = 0; r < reps; ++r)
        for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
    float s = 0;
    for (float v : acc) s += v;
    *sink = s;
    return 2.0 * kChains * static_cast<double>(reps);
}

using FmaLoop = double (*)(int64_t, float*);

FmaLoop widest(const IsaGate& gate, const char** isa) {
#if defined(__x86_64__)
    if (gate.allows(Isa::Avx512)) return *isa = "avx512", peak::avx512::fma_loop;
    if (gate.allows(Isa::Avx2)) return *isa = "avx2", peak::avx2::fma_loop;
#endif
#if defined(__powerpc64__) && defined(__VSX__)
    if (gate.allows(Isa::Vsx)) return *isa = "vsx", fma_vsx;
#endif
    *isa = "scalar";
    return fma_scalar;
}

double run_loop(FmaLoop loop, int threads, double seconds) {
    float sink = 0.0f;
    // Calibrate the pass count on one thread, then run it on all of them at once.
    int64_t reps = 1 << 16;
    for (;;) {
        const auto t0 = std::chrono::steady_clock::now();
        loop(reps, &sink);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s > 0.02) {
            reps = static_cast<int64_t>(static_cast<double>(reps) * seconds / s) + 1;
            break;
        }
        reps *= 4;
    }
    double flops = 0.0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
        float local = 0.0f;
        flops += loop(reps, &local);
        if (local == 12345.0f) sink += local;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return flops / s * 1e-9 + (sink == 12345.0f ? 1e-30 : 0.0);
}

}  // namespace

PeakResult measure_peak(int threads, double seconds, const IsaGate& gate) {
    PeakResult result{0.0, ""};
    const FmaLoop loop = widest(gate, &result.isa);
    result.gflops = run_loop(loop, threads, seconds);
    return result;
}

PeakResult measure_bf16_peak(int threads, double seconds, const IsaGate& gate) {
#if defined(__x86_64__)
    if (gate.allows(Isa::Avx512Bf16)) return {run_loop(peak::avx512_bf16::dot_loop, threads, seconds), "avx512_bf16"};
#endif
    (void)threads, (void)seconds, (void)gate;
    return {0.0, "none"};
}

}  // namespace rudra::kernels
