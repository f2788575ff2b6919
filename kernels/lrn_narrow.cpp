// s = 1 + alpha / size^2 * (box sum of x^2), y = x s^-3/4, and backward
// dx = dy s^-3/4 - 2 alpha beta / size^2 * x * box(dy x s^-3/4 / s).
// A row is one register. The box sum adds the window's rows, then shifts of that sum by
// -half .. half, each a permutation under a mask (zero past the row's ends).
// This is avx512_narrow in LrnKernel's list (kernels/lrn.h), written on the AVX-512 vector
// traits inside their target region (kernels/simd/target_region.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/lrn.h"
#include "kernels/simd/target_region.h"

namespace rudra::kernels::lrn {
namespace {

constexpr int kMaxWidth = 16, kMaxSize = 15;

// Shift d of a row (lane w takes lane w + d) for d = -half .. half, zero outside the row.
struct Shifts {
    int half;
    int32_t idx[kMaxSize][16];
    uint16_t mask[kMaxSize];
};

}  // namespace
}  // namespace rudra::kernels::lrn

#if defined(__x86_64__)
RUDRA_BEGIN_TARGET_AVX512
#include "kernels/simd/avx512.h"
namespace rudra::kernels::lrn {
namespace {

using V = simd::Avx512;

inline V::F row_box(V::F v, const Shifts& s) {
    V::F sum = V::zero();
    for (int d = 0; d <= 2 * s.half; ++d) sum = V::add(sum, V::permute(s.mask[d], V::load_index(s.idx[d]), v));
    return sum;
}

// s^-3/4 = r sqrt(r) with r = 1 / sqrt(s), as the general path computes it; inverse receives
// 1 / s = r^2.
inline V::F inverse_three_quarters(V::F s, V::F* inverse = nullptr) {
    const V::F r = V::div(V::set1(1.0f), V::sqrt(s));
    if (inverse) *inverse = V::mul(r, r);
    return V::mul(r, V::sqrt(r));
}

// The scale of row h of a plane: 1 + a * box sum of squares.
inline V::F scale_row(const float* plane, const LrnGeometry& g, const Shifts& s, V::M cols, int h, V::F a) {
    V::F v = V::zero();
    for (int hh = std::max(0, h - s.half); hh <= std::min(g.height - 1, h + s.half); ++hh) {
        const V::F x = V::load(cols, plane + static_cast<long>(hh) * g.width);
        v = V::fma(x, x, v);
    }
    return V::fma(a, row_box(v, s), V::set1(1.0f));
}

void forward_plane(const float* xp, const LrnGeometry& g, const Shifts& s, float* yp) {
    const V::M cols = V::first(g.width);
    const V::F a = V::set1(g.alpha / static_cast<float>(g.local_size * g.local_size));
    for (int h = 0; h < g.height; ++h) {
        const V::F xr = V::load(cols, xp + static_cast<long>(h) * g.width);
        V::store(yp + static_cast<long>(h) * g.width, cols,
                 V::mul(xr, inverse_three_quarters(scale_row(xp, g, s, cols, h, a))));
    }
}

// power and ratio: g.height x 16 floats of scratch.
void backward_plane(const float* xp, const float* dyp, const LrnGeometry& g, const Shifts& s, float* power,
                    float* ratio, float* dxp) {
    const V::M cols = V::first(g.width);
    const float an = g.alpha / static_cast<float>(g.local_size * g.local_size);
    const V::F a = V::set1(an), coeff = V::set1(2.0f * an * g.beta);
    for (int h = 0; h < g.height; ++h) {
        const long o = static_cast<long>(h) * g.width;
        V::F inverse;
        const V::F pw = inverse_three_quarters(scale_row(xp, g, s, cols, h, a), &inverse);
        const V::F dyx = V::mul(V::load(cols, dyp + o), V::load(cols, xp + o));
        V::store(power + 16 * h, pw);
        V::store(ratio + 16 * h, V::mul(dyx, V::mul(pw, inverse)));
    }
    for (int h = 0; h < g.height; ++h) {
        const long o = static_cast<long>(h) * g.width;
        V::F v = V::zero();
        for (int hh = std::max(0, h - s.half); hh <= std::min(g.height - 1, h + s.half); ++hh)
            v = V::add(v, V::load(ratio + 16 * hh));
        const V::F grad = V::fnma(V::mul(coeff, V::load(cols, xp + o)), row_box(v, s),
                                  V::mul(V::load(cols, dyp + o), V::load(power + 16 * h)));
        V::store(dxp + o, cols, grad);
    }
}

}  // namespace
}  // namespace rudra::kernels::lrn
RUDRA_END_TARGET
#endif

namespace rudra::kernels::lrn {

#if defined(__x86_64__)
namespace {

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

// The plane loops, outside the target region: clang outlines an OpenMP region into a function
// of its own, without the enclosing function's target attribute, and then refuses the AVX-512
// code in it.
void forward(const float* x, const LrnGeometry& g, int num, float* y, float*) {
    const Shifts s = make_shifts(g);
    const long plane = static_cast<long>(g.height) * g.width, planes = static_cast<long>(num) * g.channels;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) forward_plane(x + p * plane, g, s, y + p * plane);
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
