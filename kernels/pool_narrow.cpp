// Average pooling is separable: the window's rows are summed column by column, then each output
// adds kernel_w columns of that sum. Max pooling likewise takes each column's maximum over the
// window's rows, with its index, then the maximum over kernel_w columns. With at most 32 columns the column sums are two registers,
// and every tap is one permutation of them under a mask (zero outside the image), so nothing
// goes through memory between the two steps. (Storing the sums and reloading them at shifted
// offsets had stalled on store forwarding, and was slower than summing taps directly.) The
// backward pass is the transpose: the shares dy / divisor of one output row are one register,
// each input column gathers, by the same permutations, the shares of the windows covering it,
// and each input row is the sum of those rows over the windows that hold it.
//
// Max pooling keeps Caffe's choice among equal maxima, the first in the window's row-major scan:
// down a column the first row wins, and across columns the smaller input index.
// This is avx512_narrow in PoolKernel's lists (kernels/pooling.h), written on the AVX-512 vector
// traits inside their target region (kernels/simd/target_region.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/pool_impls.h"
#include "kernels/simd/target_region.h"

#if defined(__x86_64__)
namespace rudra::kernels::pool {
namespace {

constexpr int kMaxWidth = 32, kMaxOutputs = 16, kMaxKernel = 16;

// Permutation tables of one geometry, by tap kw:
//   forward: output lane px reads column SW px + kw - pad_w of the column sums [lo, hi];
//   backward: input column w (lanes of half 0: w < 16, half 1: w >= 16) takes the share of
//   output (w + pad_w - kw) / SW when that is whole and an output of the row.
struct Tables {
    int32_t fwd_idx[kMaxKernel][16];
    uint16_t fwd_mask[kMaxKernel];
    int32_t bwd_idx[kMaxKernel][2][16];
    uint16_t bwd_mask[kMaxKernel][2];
    uint16_t lo_cols, hi_cols;  // the input columns in the row's two registers
    uint16_t outputs;           // the outputs of a row
};

// Input rows [hs, he) of output row py's windows: never empty, as the padding is smaller than
// the kernel (declines()).
inline void window_rows(const PoolGeometry& g, int py, int& hs, int& he) {
    const int h0 = py * g.stride_h - g.pad_h;
    hs = std::max(h0, 0);
    he = std::min(h0 + g.kernel_h, g.height);
}

std::string declines(const PoolGeometry& g) {
    if (g.width > kMaxWidth) return "rows of " + std::to_string(g.width) + ", wider than " + std::to_string(kMaxWidth);
    if (g.pooled_w() > kMaxOutputs) return std::to_string(g.pooled_w()) + " outputs a row, above 16";
    if (g.kernel_w > kMaxKernel) return "kernel " + std::to_string(g.kernel_w) + " wide, above 16";
    if (g.pad_h >= g.kernel_h || g.pad_w >= g.kernel_w) return "padding not below the kernel";
    if (g.stride_w != 1 && g.stride_w != 2) return "column stride " + std::to_string(g.stride_w) + ", not 1 or 2";
    return "";
}

Tables make_tables(const PoolGeometry& g) {
    Tables t{};
    const int pw = g.pooled_w(), sw = g.stride_w, W = g.width;
    t.lo_cols = static_cast<uint16_t>(W >= 16 ? 0xFFFF : (1u << W) - 1);
    t.hi_cols = static_cast<uint16_t>(W > 16 ? (1u << (W - 16)) - 1 : 0);
    t.outputs = static_cast<uint16_t>((1u << pw) - 1);
    for (int kw = 0; kw < g.kernel_w; ++kw) {
        for (int px = 0; px < 16; ++px) {
            const int col = sw * px + kw - g.pad_w;
            const bool in = px < pw && col >= 0 && col < g.width;
            t.fwd_idx[kw][px] = in ? col : 0;
            if (in) t.fwd_mask[kw] |= static_cast<uint16_t>(1u << px);
        }
        for (int half = 0; half < 2; ++half)
            for (int lane = 0; lane < 16; ++lane) {
                const int w = 16 * half + lane, start = w + g.pad_w - kw;  // padded column of the window start
                const bool in = w < g.width && start >= 0 && start % sw == 0 && start / sw < pw;
                t.bwd_idx[kw][half][lane] = in ? start / sw : 0;
                if (in) t.bwd_mask[kw][half] |= static_cast<uint16_t>(1u << lane);
            }
    }
    return t;
}

// 1 / divisor of each output, 16 per output row: the window clipped to the padded image, as in
// Caffe (zero past the row's outputs).
std::vector<float> inverse_divisors(const PoolGeometry& g) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    std::vector<float> inv(static_cast<size_t>(ph) * 16, 0.0f);
    for (int py = 0; py < ph; ++py) {
        const int h0 = py * g.stride_h - g.pad_h;
        const int dh = std::min(h0 + g.kernel_h, g.height + g.pad_h) - h0;
        for (int px = 0; px < pw; ++px) {
            const int w0 = px * g.stride_w - g.pad_w;
            const int dw = std::min(w0 + g.kernel_w, g.width + g.pad_w) - w0;
            inv[static_cast<size_t>(py) * 16 + px] = 1.0f / static_cast<float>(dh * dw);
        }
    }
    return inv;
}

}  // namespace
}  // namespace rudra::kernels::pool

RUDRA_BEGIN_TARGET_AVX512
#include "kernels/simd/avx512.h"
namespace rudra::kernels::pool {
namespace {

using V = simd::Avx512;

void avg_forward_plane(const float* xp, const PoolGeometry& g, const Tables& t, const float* inv, float* yp) {
    const int ph = g.pooled_h(), pw = g.pooled_w(), W = g.width;
    const V::M lo_cols = t.lo_cols, hi_cols = t.hi_cols, outputs = t.outputs;
    for (int py = 0; py < ph; ++py) {
        int hs, he;
        window_rows(g, py, hs, he);
        V::F lo = V::zero(), hi = V::zero();
        for (int h = hs; h < he; ++h) {
            lo = V::add(lo, V::load(lo_cols, xp + static_cast<long>(h) * W));
            hi = V::add(hi, V::load(hi_cols, xp + static_cast<long>(h) * W + 16));
        }
        V::F sum = V::zero();
        for (int kw = 0; kw < g.kernel_w; ++kw)
            sum = V::add(sum, V::permute2(t.fwd_mask[kw], V::load_index(t.fwd_idx[kw]), lo, hi));
        V::store(yp + static_cast<long>(py) * pw, outputs, V::mul(sum, V::load(inv + static_cast<size_t>(py) * 16)));
    }
}

void avg_backward_plane(const float* dyp, const PoolGeometry& g, const Tables& t, const float* inv, float* spread,
                        float* dxp) {
    const int ph = g.pooled_h(), pw = g.pooled_w(), W = g.width, H = g.height;
    const V::M lo_cols = t.lo_cols, hi_cols = t.hi_cols, outputs = t.outputs;
    for (int py = 0; py < ph; ++py) {
        const V::F share =
            V::mul(V::load(outputs, dyp + static_cast<long>(py) * pw), V::load(inv + static_cast<size_t>(py) * 16));
        V::F lo = V::zero(), hi = V::zero();
        for (int kw = 0; kw < g.kernel_w; ++kw) {
            lo = V::add(lo, V::permute(t.bwd_mask[kw][0], V::load_index(t.bwd_idx[kw][0]), share));
            if (hi_cols) hi = V::add(hi, V::permute(t.bwd_mask[kw][1], V::load_index(t.bwd_idx[kw][1]), share));
        }
        V::store(spread + static_cast<size_t>(py) * kMaxWidth, lo);
        V::store(spread + static_cast<size_t>(py) * kMaxWidth + 16, hi);
    }
    for (int h = 0; h < H; ++h) {
        // Output rows whose windows [py sh - pad_h, + kernel_h) hold row h.
        const int first = std::max(0, (h + g.pad_h - g.kernel_h + g.stride_h) / g.stride_h);
        const int last = std::min(ph - 1, (h + g.pad_h) / g.stride_h);
        V::F lo = V::zero(), hi = V::zero();
        for (int py = first; py <= last; ++py) {
            lo = V::add(lo, V::load(spread + static_cast<size_t>(py) * kMaxWidth));
            hi = V::add(hi, V::load(spread + static_cast<size_t>(py) * kMaxWidth + 16));
        }
        float* row = dxp + static_cast<long>(h) * W;
        V::store(row, lo_cols, lo);
        V::store(row + 16, hi_cols, hi);
    }
}

void max_forward_plane(const float* xp, const PoolGeometry& g, const Tables& t, float* yp, int32_t* ap) {
    const int ph = g.pooled_h(), pw = g.pooled_w(), W = g.width;
    const V::M lo_cols = t.lo_cols, hi_cols = t.hi_cols, outputs = t.outputs;
    const V::I iota = V::iota();
    for (int py = 0; py < ph; ++py) {
        int hs, he;
        window_rows(g, py, hs, he);
        // Column maxima over the window's rows and their input indices.
        V::F lo = V::load(lo_cols, xp + static_cast<long>(hs) * W),
             hi = V::load(hi_cols, xp + static_cast<long>(hs) * W + 16);
        V::I ilo = V::addi(iota, V::set1i(hs * W)), ihi = V::addi(iota, V::set1i(hs * W + 16));
        for (int h = hs + 1; h < he; ++h) {
            const V::F vlo = V::load(lo_cols, xp + static_cast<long>(h) * W),
                       vhi = V::load(hi_cols, xp + static_cast<long>(h) * W + 16);
            const V::M tlo = V::greater(vlo, lo), thi = V::greater(vhi, hi);
            lo = V::select(tlo, lo, vlo);
            hi = V::select(thi, hi, vhi);
            ilo = V::select(tlo, ilo, V::addi(iota, V::set1i(h * W)));
            ihi = V::select(thi, ihi, V::addi(iota, V::set1i(h * W + 16)));
        }
        // Across the window's columns: the larger value, or the smaller index among equals.
        V::F best = V::zero();
        V::I arg = V::set1i(-1);
        V::M seen = V::none();
        for (int kw = 0; kw < g.kernel_w; ++kw) {
            const V::M in = t.fwd_mask[kw];
            const V::I idx = V::load_index(t.fwd_idx[kw]);
            const V::F v = V::permute2(idx, lo, hi);
            const V::I i = V::permute2(idx, ilo, ihi);
            const V::M better = V::either(V::greater(v, best), V::both(V::equal(v, best), V::less(i, arg)));
            const V::M take = V::either(V::only_b(seen, in), V::both(in, better));
            seen = V::either(seen, in);
            best = V::select(take, best, v);
            arg = V::select(take, arg, i);
        }
        if (outputs == V::first(V::kLanes)) {
            V::store(yp + static_cast<long>(py) * pw, best);
            V::store(ap + static_cast<long>(py) * pw, arg);
        } else {
            V::store(yp + static_cast<long>(py) * pw, outputs, best);
            V::store(ap + static_cast<long>(py) * pw, outputs, arg);
        }
    }
}

}  // namespace
}  // namespace rudra::kernels::pool
RUDRA_END_TARGET

namespace rudra::kernels::pool {
namespace {

// Each pass is a plain function whose OpenMP loop calls the target function of a plane: clang
// outlines an OpenMP region into a function of its own, without the enclosing function's target
// attribute, and then refuses the AVX-512 code in it.
void avg_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t*) {
    const Tables t = make_tables(g);
    const std::vector<float> inv = inverse_divisors(g);
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        prefetch_ahead(x, in_plane, p, planes);
        avg_forward_plane(x + p * in_plane, g, t, inv.data(), y + p * out_plane);
    }
}

void avg_backward(const float* dy, const int32_t*, const PoolGeometry& g, long planes, float* dx) {
    const Tables t = make_tables(g);
    const std::vector<float> inv = inverse_divisors(g);
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel
    {
        // Each output row's spread shares, then each input row sums those of the windows
        // covering it and is written once: no memset, and no masked store read back (which
        // does not forward).
        std::vector<float> spread(static_cast<size_t>(g.pooled_h()) * kMaxWidth);
#pragma omp for schedule(static)
        for (long p = 0; p < planes; ++p)
            avg_backward_plane(dy + p * out_plane, g, t, inv.data(), spread.data(), dx + p * in_plane);
    }
}

void max_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    const Tables t = make_tables(g);
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        prefetch_ahead(x, in_plane, p, planes);
        max_forward_plane(x + p * in_plane, g, t, y + p * out_plane, argmax + p * out_plane);
    }
}

}  // namespace

Kind narrow_avx512() { return Kind{max_forward, avg_forward, avg_backward, nullptr, declines}; }

}  // namespace rudra::kernels::pool

#else

namespace rudra::kernels::pool {

Kind narrow_avx512() { return Kind{}; }

}  // namespace rudra::kernels::pool

#endif
