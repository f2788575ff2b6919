// im2col / col2im. Every image row is first widened by the padding (and, for im2col with a
// stride along the width, split into phases), so that each row segment of the column matrix is
// one plain copy of out_w values with no bounds to test: on small images (out_w 8-32) the
// bounds, not the copying, used to take most of the time. col2im widens only for stride 1 and no
// dilation along the width.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/conv_geometry.h"
#include "kernels/transpose.h"

namespace rudra::kernels {

std::string geometry_problem(const ConvGeometry& g) {
    if (g.channels < 1 || g.height < 1 || g.width < 1 || g.kernel_h < 1 || g.kernel_w < 1 || g.stride_h < 1 ||
        g.stride_w < 1 || g.dilation_h < 1 || g.dilation_w < 1 || g.pad_h < 0 || g.pad_w < 0)
        return "channels, input, kernel, stride and dilation must be at least 1 and padding at least 0";
    constexpr int64_t kIntMax = 2147483647;
    const auto fits = [](int64_t v) { return v >= 0 && v <= kIntMax; };
    const int64_t pad_b = g.pad_b(), pad_r = g.pad_r();
    const int64_t span_h = int64_t{g.dilation_h} * (g.kernel_h - 1) + 1, span_w = int64_t{g.dilation_w} * (g.kernel_w - 1) + 1;
    const int64_t in_h = int64_t{g.height} + g.pad_h + pad_b, in_w = int64_t{g.width} + g.pad_w + pad_r;
    const int64_t padded_h = int64_t{g.height} + g.pad_h + std::max<int64_t>(pad_b, g.pad_h);
    const int64_t padded_w = int64_t{g.width} + g.pad_w + std::max<int64_t>(pad_r, g.pad_w);
    const std::string shape = std::to_string(g.channels) + "x" + std::to_string(g.height) + "x" + std::to_string(g.width);
    if (!fits(span_h) || !fits(span_w) || !fits(padded_h) || !fits(padded_w))
        return "the input " + shape + " with its padding, or the kernel's span, is past the kernels' int sizes";
    if (in_h < span_h || in_w < span_w) return "the kernel is larger than the padded input " + shape;
    const int64_t out_h = (in_h - span_h) / g.stride_h + 1, out_w = (in_w - span_w) / g.stride_w + 1;
    // Products of three ints may pass 64 bits: they saturate instead.
    const auto mul = [](int64_t a, int64_t b) {
        int64_t r;
        return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
    };
    const int64_t col_rows = mul(mul(g.channels, g.kernel_h), g.kernel_w), col_cols = mul(out_h, out_w);
    if (!fits(col_rows) || !fits(col_cols) || !fits(mul(mul(g.channels, padded_h), padded_w)) ||
        col_rows > (int64_t{1} << 62) / std::max<int64_t>(col_cols, 1))
        return "the input " + shape + " gives " + std::to_string(out_h) + "x" + std::to_string(out_w) + " outputs of " +
               std::to_string(col_rows) + " taps each: past the kernels' int sizes";
    return "";
}

namespace {

bool plain_width(const ConvGeometry& g) { return g.stride_w == 1 && g.dilation_w == 1; }
size_t round16(size_t n) { return (n + 15) / 16 * 16; }
int padded_width(const ConvGeometry& g) { return g.padded_w(); }

// im2col reads image rows widened by the padding and split by stride_w into phases: phase q of
// a widened row holds its values q, q + s, q + 2 s, ... So the values a segment of an im2col
// row takes from one image row (x s + kw dilation_w, x < out_w) are consecutive: phase
// (kw dilation_w) % s from (kw dilation_w) / s on. With stride 1 a row has one phase, itself.
// (AlexNet conv1's stride 4 had gone value by value with bounds tests: a quarter of its
// backward-weights pass.)
int phase_length(const ConvGeometry& g) { return (padded_width(g) + g.stride_w - 1) / g.stride_w; }
int phased_width(const ConvGeometry& g) { return phase_length(g) * g.stride_w; }
size_t padded_floats(const ConvGeometry& g) {
    return round16(static_cast<size_t>(g.channels) * g.padded_h() * phased_width(g));
}

// Image rows widened and split into phases: [channels * height][stride_w][phase_length()].
void widen_rows(const float* img, const ConvGeometry& g, float* wide) {
    const int rows = g.channels * g.height, s = g.stride_w, len = phase_length(g);
    for (int r = 0; r < rows; ++r, img += g.width, wide += static_cast<long>(s) * len) {
        if (s == 1) {
            std::fill(wide, wide + g.pad_w, 0.0f);
            std::copy(img, img + g.width, wide + g.pad_w);
            std::fill(wide + g.pad_w + g.width, wide + len, 0.0f);
            continue;
        }
        for (int q = 0; q < s; ++q)
            for (int j = 0; j < len; ++j) {
                const int ix = q + j * s - g.pad_w;
                wide[q * len + j] = ix >= 0 && ix < g.width ? img[ix] : 0.0f;
            }
    }
}

// As widen_rows, with the padding's zero rows above and below each channel's: padded_h() rows
// per channel.
void widen_rows_padded(const float* img, const ConvGeometry& g, float* wide) {
    const long row_floats = static_cast<long>(g.stride_w) * phase_length(g);
    const long above = g.pad_h * row_floats, below = (g.padded_h() - g.pad_h - g.height) * row_floats;
    ConvGeometry channel = g;
    channel.channels = 1;
    for (int c = 0; c < g.channels; ++c, img += static_cast<long>(g.height) * g.width) {
        std::fill(wide, wide + above, 0.0f);
        wide += above;
        widen_rows(img, channel, wide);
        wide += g.height * row_floats;
        std::fill(wide, wide + below, 0.0f);
        wide += below;
    }
}

// Row (c, kh, kw) of the im2col matrix, out_h() * out_w() values, from the phased rows.
void im2col_row_wide(const float* wide, const ConvGeometry& g, int c, int kh, int kw, float* out) {
    const int oh = g.out_h(), ow = g.out_w(), s = g.stride_w, len = phase_length(g), dx = kw * g.dilation_w;
    const long row_floats = static_cast<long>(s) * len, from = static_cast<long>(dx % s) * len + dx / s;
    for (int y = 0; y < oh; ++y, out += ow) {
        const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
        if (iy < 0 || iy >= g.height) {
            std::fill(out, out + ow, 0.0f);
            continue;
        }
        const float* src = wide + (static_cast<long>(c) * g.height + iy) * row_floats + from;
        for (int x = 0; x < ow; ++x) out[x] = src[x];
    }
}

// Calls row(c, kh, kw, out) for the rows of the im2col matrix in order, P floats apart.
template <class Row>
void for_rows(const float* img, const ConvGeometry& g, float* scratch, Row&& row) {
    widen_rows(img, g, scratch);
    row([&](int c, int kh, int kw, float* out) { im2col_row_wide(scratch, g, c, kh, kw, out); });
}

}  // namespace

size_t im2col_scratch_floats(const ConvGeometry& g, int nr) {
    return padded_floats(g) + round16(static_cast<size_t>(std::max(nr, 0)) * g.col_cols());
}

void im2col(const float* img, const ConvGeometry& g, float* col, float* scratch) {
    const long P = g.col_cols();
    for_rows(img, g, scratch, [&](auto&& make_row) {
        for (int c = 0; c < g.channels; ++c)
            for (int kh = 0; kh < g.kernel_h; ++kh)
                for (int kw = 0; kw < g.kernel_w; ++kw, col += P) make_row(c, kh, kw, col);
    });
}

void im2col_slivers(const float* img, const ConvGeometry& g, int nr, float* out, float* scratch,
                    TransposeFn transpose_fn) {
    // nr rows of im2col at a time, written contiguously, then transposed into their sliver.
    const int P = g.col_cols(), K = g.col_rows(), taps = g.kernel_h * g.kernel_w;
    float* rows = scratch + padded_floats(g);
    for_rows(img, g, scratch, [&](auto&& make_row) {
        for (int r0 = 0; r0 < K; r0 += nr) {
            const int n = std::min(nr, K - r0);
            for (int i = 0; i < n; ++i) {
                const int r = r0 + i, c = r / taps, tap = r % taps;
                make_row(c, tap / g.kernel_w, tap % g.kernel_w, rows + static_cast<long>(i) * P);
            }
            if (n < nr) std::fill(rows + static_cast<long>(n) * P, rows + static_cast<long>(nr) * P, 0.0f);
            transpose_fn(rows, nr, P, P, out + static_cast<long>(r0) * P, nr);
        }
    });
}

namespace {

// The channels rows [r0, r1) of the im2col matrix read, widened with their padding on all sides
// (widen_rows_padded); first_run(r) is where row r's first output row reads.
struct ChannelRuns {
    ConvGeometry part;  // g over those channels only
    int taps, c0;
    long row_floats;
    const float* wide;

    ChannelRuns(const float* img, const ConvGeometry& g, int r0, int r1, float* scratch)
        : part(g), taps(g.kernel_h * g.kernel_w), c0(r0 / taps), row_floats(static_cast<long>(g.stride_w) * phase_length(g)),
          wide(scratch) {
        part.channels = (r1 - 1) / taps + 1 - c0;
        widen_rows_padded(img + static_cast<long>(c0) * g.height * g.width, part, scratch);
    }
    const float* first_run(int r) const {
        const int c = r / taps - c0, kh = r % taps / part.kernel_w, dx = r % part.kernel_w * part.dilation_w;
        return wide + (static_cast<long>(c) * part.padded_h() + kh * part.dilation_h) * row_floats +
               static_cast<long>(dx % part.stride_w) * phase_length(part) + dx / part.stride_w;
    }
    int64_t run_stride() const { return part.stride_h * row_floats; }
};

}  // namespace

void im2col_bf16_slivers(const float* img, const ConvGeometry& g, int r0, int r1, int width, PairRunsFn pair_runs,
                         uint32_t* out, float* scratch) {
    // Each pair of im2col rows straight from the widened image: no FP32 row is written and read
    // back (which had taken more time than the products on cifar10_full's 16 x 16 images).
    const int k2 = (r1 - r0 + 1) / 2;
    const ChannelRuns runs(img, g, r0, r1, scratch);
    for (int q = 0; q < k2; ++q) {
        const int r = r0 + 2 * q;
        pair_runs(runs.first_run(r), r + 1 < r1 ? runs.first_run(r + 1) : nullptr, runs.run_stride(), g.out_h(),
                  g.out_w(), width, static_cast<int64_t>(k2) * width, out + static_cast<int64_t>(q) * width);
    }
}

void im2col_bf16_row_slivers(const float* img, const ConvGeometry& g, int r0, int r1, int width, RoundRunsFn round_runs,
                             uint32_t* out, float* scratch, TransposeFn transpose_fn) {
    const int P = g.col_cols(), k2 = (P + 1) / 2;
    const ChannelRuns runs(img, g, r0, r1, scratch);
    // Each row rounded straight from the widened image into its pair words, k2 per row; moved by
    // the transpose as floats (bits unchanged).
    float* words = scratch + padded_floats(runs.part);
    uint16_t* halves = reinterpret_cast<uint16_t*>(words);
    for (int s0 = r0; s0 < r1; s0 += width) {
        const int count = std::min(width, r1 - s0);
        for (int i = 0; i < count; ++i) {
            uint16_t* h = halves + static_cast<int64_t>(i) * 2 * k2;
            round_runs(runs.first_run(s0 + i), runs.run_stride(), g.out_h(), g.out_w(), h);
            if (P % 2) h[P] = 0;
        }
        uint32_t* sliver = out + static_cast<int64_t>((s0 - r0) / width) * k2 * width;
        transpose_fn(words, count, k2, k2, reinterpret_cast<float*>(sliver), width);
        if (count < width)
            for (int q = 0; q < k2; ++q)
                std::fill(sliver + static_cast<int64_t>(q) * width + count, sliver + static_cast<int64_t>(q + 1) * width, 0u);
    }
}

void col2im(const float* col, const ConvGeometry& g, float* img, float* scratch) {
    const int oh = g.out_h(), ow = g.out_w();
    if (plain_width(g)) {
        // Accumulate into widened rows, then keep their middle.
        const int wp = padded_width(g);
        std::fill(scratch, scratch + static_cast<size_t>(g.channels) * g.height * wp, 0.0f);
        for (int c = 0; c < g.channels; ++c)
            for (int kh = 0; kh < g.kernel_h; ++kh)
                for (int kw = 0; kw < g.kernel_w; ++kw)
                    for (int y = 0; y < oh; ++y, col += ow) {
                        const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                        if (iy < 0 || iy >= g.height) continue;
                        float* dst = scratch + (static_cast<long>(c) * g.height + iy) * wp + kw;
                        for (int x = 0; x < ow; ++x) dst[x] += col[x];
                    }
        const float* wide = scratch + g.pad_w;
        for (int r = 0; r < g.channels * g.height; ++r, wide += wp, img += g.width)
            std::copy(wide, wide + g.width, img);
        return;
    }
    std::memset(img, 0, sizeof(float) * g.channels * g.height * g.width);
    for (int c = 0; c < g.channels; ++c) {
        float* plane = img + static_cast<long>(c) * g.height * g.width;
        for (int kh = 0; kh < g.kernel_h; ++kh)
            for (int kw = 0; kw < g.kernel_w; ++kw)
                for (int y = 0; y < oh; ++y, col += ow) {
                    const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                    if (iy < 0 || iy >= g.height) continue;
                    float* row = plane + static_cast<long>(iy) * g.width;
                    const int x_off = kw * g.dilation_w - g.pad_w;
                    for (int x = 0; x < ow; ++x) {
                        const int ix = x * g.stride_w + x_off;
                        if (ix >= 0 && ix < g.width) row[ix] += col[x];
                    }
                }
    }
}

}  // namespace rudra::kernels
