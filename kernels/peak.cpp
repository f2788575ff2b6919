#include "kernels/peak.h"

#include <omp.h>

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__powerpc64__) && defined(__VSX__)
#include <altivec.h>
#endif

#include "kernels/isa_target.h"

namespace rudra::kernels {
namespace {

// Each returns the flops done in `reps` passes; the result is consumed through `sink` so the
// compiler cannot drop the work. 12 independent chains cover 4-cycle latency on 2-3 FMA ports.
constexpr int kChains = 12;

#if defined(__x86_64__)
// GCC 12's _mm512_reduce_add_ps starts from an undefined vector, which -Wuninitialized reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
RUDRA_TARGET_AVX512 double fma_avx512(int64_t reps, float* sink) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    __m512 s = acc[0];
    for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
    *sink = _mm512_reduce_add_ps(s);
    return 2.0 * 16 * kChains * static_cast<double>(reps);
}
#pragma GCC diagnostic pop

RUDRA_TARGET_AVX2 double fma_avx2(int64_t reps, float* sink) {
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    float out[8];
    __m256 s = acc[0];
    for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
    _mm256_storeu_ps(out, s);
    *sink = out[0] + out[7];
    return 2.0 * 8 * kChains * static_cast<double>(reps);
}
#endif

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
    if (gate.allows(Isa::Avx512)) return *isa = "avx512", fma_avx512;
    if (gate.allows(Isa::Avx2)) return *isa = "avx2", fma_avx2;
#endif
#if defined(__powerpc64__) && defined(__VSX__)
    if (gate.allows(Isa::Vsx)) return *isa = "vsx", fma_vsx;
#endif
    *isa = "scalar";
    return fma_scalar;
}

}  // namespace

PeakResult measure_peak(int threads, double seconds, const IsaGate& gate) {
    PeakResult result{0.0, ""};
    const FmaLoop loop = widest(gate, &result.isa);
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
    result.gflops = flops / s * 1e-9 + (sink == 12345.0f ? 1e-30 : 0.0);
    return result;
}

}  // namespace rudra::kernels
