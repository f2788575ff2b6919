// s = 1 + alpha / size^2 * (box sum of x^2), y = x s^-3/4, and backward
// dx = dy s^-3/4 - 2 alpha beta / size^2 * x * box(dy x s^-3/4 / s).
// A row is one register. The box sum adds the window's rows, then shifts of that sum by
// -half .. half, each a permutation under a mask (zero past the row's ends).
// This is avx512_narrow in LrnKernel's list (kernels/lrn.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/isa_target.h"
#include "kernels/lrn.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rudra::kernels::lrn {

namespace {
constexpr int kMaxWidth = 16, kMaxSize = 15;
}  // namespace

#if defined(__x86_64__)
namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's headers start some values undefined
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Shift d of a row (lane w takes lane w + d) for d = -half .. half, zero outside the row.
struct Shifts {
    int half;
    int32_t idx[kMaxSize][16];
    uint16_t mask[kMaxSize];
};

Shifts make_shifts(const LrnGeometry& g) {
    Shifts s{};
    s.half = (g.local_size - 1) / 2;
    for (int d = -s.half; d <= s.half; ++d)
        for (int w = 0; w < 16; ++w) {
            const bool in = w < g.width && w + d >= 0 && w + d < g.width;
            s.idx[d + s.half][w] = in ? w + d : 0;
            if (in) s.mask[d + s.half] |= static_cast<uint16_t>(1u << w);
        }
    return s;
}

RUDRA_TARGET_AVX512 inline __m512 row_box(__m512 v, const Shifts& s) {
    __m512 sum = _mm512_setzero_ps();
    for (int d = 0; d <= 2 * s.half; ++d)
        sum = _mm512_add_ps(sum, _mm512_maskz_permutexvar_ps(s.mask[d], _mm512_loadu_si512(s.idx[d]), v));
    return sum;
}

// s^-3/4 = r sqrt(r) with r = 1 / sqrt(s), as the general path computes it; inverse receives
// 1 / s = r^2.
RUDRA_TARGET_AVX512 inline __m512 inverse_three_quarters(__m512 s, __m512* inverse = nullptr) {
    const __m512 r = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(s));
    if (inverse) *inverse = _mm512_mul_ps(r, r);
    return _mm512_mul_ps(r, _mm512_sqrt_ps(r));
}

// The scale of row h of a plane: 1 + a * box sum of squares.
RUDRA_TARGET_AVX512 inline __m512 scale_row(const float* plane, const LrnGeometry& g, const Shifts& s,
                                            __mmask16 cols, int h, __m512 a) {
    __m512 v = _mm512_setzero_ps();
    for (int hh = std::max(0, h - s.half); hh <= std::min(g.height - 1, h + s.half); ++hh) {
        const __m512 x = _mm512_maskz_loadu_ps(cols, plane + static_cast<long>(hh) * g.width);
        v = _mm512_fmadd_ps(x, x, v);
    }
    return _mm512_fmadd_ps(a, row_box(v, s), _mm512_set1_ps(1.0f));
}

// Each pass is a plain function whose OpenMP loop calls a target("avx512f") function per plane:
// clang outlines an OpenMP region into a function of its own, without the enclosing
// function's target attribute, and then refuses the AVX-512 code in it.
RUDRA_TARGET_AVX512 void forward_plane(const float* xp, const LrnGeometry& g, const Shifts& s, float* yp) {
    const __mmask16 cols = static_cast<__mmask16>((1u << g.width) - 1);
    const __m512 a = _mm512_set1_ps(g.alpha / static_cast<float>(g.local_size * g.local_size));
    for (int h = 0; h < g.height; ++h) {
        const __m512 xr = _mm512_maskz_loadu_ps(cols, xp + static_cast<long>(h) * g.width);
        _mm512_mask_storeu_ps(yp + static_cast<long>(h) * g.width, cols,
                              _mm512_mul_ps(xr, inverse_three_quarters(scale_row(xp, g, s, cols, h, a))));
    }
}

void forward(const float* x, const LrnGeometry& g, int num, float* y, float*) {
    const Shifts s = make_shifts(g);
    const long plane = static_cast<long>(g.height) * g.width, planes = static_cast<long>(num) * g.channels;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) forward_plane(x + p * plane, g, s, y + p * plane);
}

// power and ratio: g.height x 16 floats of scratch.
RUDRA_TARGET_AVX512 void backward_plane(const float* xp, const float* dyp, const LrnGeometry& g, const Shifts& s,
                                        float* power, float* ratio, float* dxp) {
    const __mmask16 cols = static_cast<__mmask16>((1u << g.width) - 1);
    const float an = g.alpha / static_cast<float>(g.local_size * g.local_size);
    const __m512 a = _mm512_set1_ps(an), coeff = _mm512_set1_ps(2.0f * an * g.beta);
    for (int h = 0; h < g.height; ++h) {
        const long o = static_cast<long>(h) * g.width;
        __m512 inverse;
        const __m512 pw = inverse_three_quarters(scale_row(xp, g, s, cols, h, a), &inverse);
        const __m512 dyx = _mm512_mul_ps(_mm512_maskz_loadu_ps(cols, dyp + o), _mm512_maskz_loadu_ps(cols, xp + o));
        _mm512_storeu_ps(power + 16 * h, pw);
        _mm512_storeu_ps(ratio + 16 * h, _mm512_mul_ps(dyx, _mm512_mul_ps(pw, inverse)));
    }
    for (int h = 0; h < g.height; ++h) {
        const long o = static_cast<long>(h) * g.width;
        __m512 v = _mm512_setzero_ps();
        for (int hh = std::max(0, h - s.half); hh <= std::min(g.height - 1, h + s.half); ++hh)
            v = _mm512_add_ps(v, _mm512_loadu_ps(ratio + 16 * hh));
        const __m512 grad =
            _mm512_fnmadd_ps(_mm512_mul_ps(coeff, _mm512_maskz_loadu_ps(cols, xp + o)), row_box(v, s),
                             _mm512_mul_ps(_mm512_maskz_loadu_ps(cols, dyp + o), _mm512_loadu_ps(power + 16 * h)));
        _mm512_mask_storeu_ps(dxp + o, cols, grad);
    }
}

void backward(const float* x, const float*, const float* dy, const LrnGeometry& g, int num, float* dx, float*) {
    const Shifts s = make_shifts(g);
    const long plane = static_cast<long>(g.height) * g.width, planes = static_cast<long>(num) * g.channels;
#pragma omp parallel
    {
        // Per row: s^-3/4, and the ratio dy x s^-3/4 / s that the second box sum adds. Stored and
        // read back whole registers at the same addresses, which store forwarding serves.
        std::vector<float> power(static_cast<size_t>(g.height) * 16), ratio(power.size());
#pragma omp for schedule(static)
        for (long p = 0; p < planes; ++p)
            backward_plane(x + p * plane, dy + p * plane, g, s, power.data(), ratio.data(), dx + p * plane);
    }
}

#pragma GCC diagnostic pop

size_t no_scratch(const LrnGeometry&, int) { return 0; }
const LrnKernel::Passes kPasses{forward, backward, no_scratch};

}  // namespace

const LrnKernel::Passes* narrow_avx512() { return &kPasses; }

#else

const LrnKernel::Passes* narrow_avx512() { return nullptr; }

#endif

std::string narrow_declines(const LrnGeometry& g) {
    if (g.across_channels) return "across channels";
    if (g.width > kMaxWidth) return "rows of " + std::to_string(g.width) + ", wider than " + std::to_string(kMaxWidth);
    if (g.local_size > kMaxSize) return "local_size " + std::to_string(g.local_size) + ", above 15";
    if (g.beta != 0.75f) return "beta " + std::to_string(g.beta) + ", not 0.75";
    return "";
}

}  // namespace rudra::kernels::lrn
