#include <cstring>

#include "kernels/conv_geometry.h"

namespace rudra::kernels {

void im2col(const float* img, const ConvGeometry& g, float* col) {
    const int oh = g.out_h(), ow = g.out_w();
    for (int c = 0; c < g.channels; ++c) {
        const float* plane = img + static_cast<long>(c) * g.height * g.width;
        for (int kh = 0; kh < g.kernel_h; ++kh) {
            for (int kw = 0; kw < g.kernel_w; ++kw) {
                for (int y = 0; y < oh; ++y) {
                    const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                    float* out = col;
                    col += ow;
                    if (iy < 0 || iy >= g.height) {
                        std::memset(out, 0, sizeof(float) * ow);
                        continue;
                    }
                    const float* row = plane + static_cast<long>(iy) * g.width;
                    const int x_off = kw * g.dilation_w - g.pad_w;
                    if (g.stride_w == 1) {
                        // Contiguous copy with zero borders: the common case, kept branch-free.
                        int x0 = x_off < 0 ? -x_off : 0;
                        int x1 = ow;
                        if (x1 + x_off > g.width) x1 = g.width - x_off;
                        if (x1 < x0) x1 = x0;
                        for (int x = 0; x < x0 && x < ow; ++x) out[x] = 0.0f;
                        if (x1 > x0) std::memcpy(out + x0, row + x0 + x_off, sizeof(float) * (x1 - x0));
                        for (int x = (x1 > x0 ? x1 : x0); x < ow; ++x) out[x] = 0.0f;
                    } else {
                        for (int x = 0; x < ow; ++x) {
                            const int ix = x * g.stride_w + x_off;
                            out[x] = (ix >= 0 && ix < g.width) ? row[ix] : 0.0f;
                        }
                    }
                }
            }
        }
    }
}

void im2col_slivers(const float* img, const ConvGeometry& g, int nr, float* out) {
    const int oh = g.out_h(), ow = g.out_w(), P = oh * ow;
    const long sliver = static_cast<long>(P) * nr;
    int r = 0;  // row of the im2col matrix
    for (int c = 0; c < g.channels; ++c) {
        const float* plane = img + static_cast<long>(c) * g.height * g.width;
        for (int kh = 0; kh < g.kernel_h; ++kh)
            for (int kw = 0; kw < g.kernel_w; ++kw, ++r) {
                float* dst = out + (r / nr) * sliver + r % nr;
                const int x_off = kw * g.dilation_w - g.pad_w;
                for (int y = 0; y < oh; ++y) {
                    const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                    float* d = dst + static_cast<long>(y) * ow * nr;
                    if (iy < 0 || iy >= g.height) {
                        for (int x = 0; x < ow; ++x) d[static_cast<long>(x) * nr] = 0.0f;
                        continue;
                    }
                    const float* row = plane + static_cast<long>(iy) * g.width;
                    for (int x = 0; x < ow; ++x) {
                        const int ix = x * g.stride_w + x_off;
                        d[static_cast<long>(x) * nr] = (ix >= 0 && ix < g.width) ? row[ix] : 0.0f;
                    }
                }
            }
    }
    for (; r % nr; ++r) {  // zero lanes past the last row
        float* dst = out + (r / nr) * sliver + r % nr;
        for (int p = 0; p < P; ++p) dst[static_cast<long>(p) * nr] = 0.0f;
    }
}

void col2im(const float* col, const ConvGeometry& g, float* img) {
    const int oh = g.out_h(), ow = g.out_w();
    std::memset(img, 0, sizeof(float) * g.channels * g.height * g.width);
    for (int c = 0; c < g.channels; ++c) {
        float* plane = img + static_cast<long>(c) * g.height * g.width;
        for (int kh = 0; kh < g.kernel_h; ++kh) {
            for (int kw = 0; kw < g.kernel_w; ++kw) {
                for (int y = 0; y < oh; ++y) {
                    const int iy = y * g.stride_h - g.pad_h + kh * g.dilation_h;
                    const float* in = col;
                    col += ow;
                    if (iy < 0 || iy >= g.height) continue;
                    float* row = plane + static_cast<long>(iy) * g.width;
                    const int x_off = kw * g.dilation_w - g.pad_w;
                    for (int x = 0; x < ow; ++x) {
                        const int ix = x * g.stride_w + x_off;
                        if (ix >= 0 && ix < g.width) row[ix] += in[x];
                    }
                }
            }
        }
    }
}

}  // namespace rudra::kernels
