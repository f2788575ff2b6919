#include "kernels/pooling.h"

#include <algorithm>
#include <cstring>

namespace rudra::kernels {

int caffe_pooled_size(int in, int kernel, int pad, int stride) {
    int span = in + 2 * pad - kernel;
    int out = (span + stride - 1) / stride + 1;  // ceil for span >= 0
    if (span < 0) out = 1;
    if (pad > 0 && (out - 1) * stride >= in + pad) --out;
    return out;
}

int PoolGeometry::pooled_h() const { return caffe_pooled_size(height, kernel_h, pad_h, stride_h); }
int PoolGeometry::pooled_w() const { return caffe_pooled_size(width, kernel_w, pad_w, stride_w); }

namespace {

struct Window {
    int h0, h1, w0, w1;  // clipped to the image
    int divisor;         // clipped to the padded image (average pooling)
};

inline Window window(const PoolGeometry& g, int py, int px) {
    int h0 = py * g.stride_h - g.pad_h, w0 = px * g.stride_w - g.pad_w;
    int h1 = std::min(h0 + g.kernel_h, g.height + g.pad_h);
    int w1 = std::min(w0 + g.kernel_w, g.width + g.pad_w);
    int divisor = (h1 - h0) * (w1 - w0);
    h0 = std::max(h0, 0);
    w0 = std::max(w0, 0);
    h1 = std::min(h1, g.height);
    w1 = std::min(w1, g.width);
    return {h0, h1, w0, w1, divisor};
}

}  // namespace

void max_pool_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        const float* xp = x + p * in_plane;
        float* yp = y + p * out_plane;
        int32_t* ap = argmax + p * out_plane;
        for (int py = 0; py < ph; ++py)
            for (int px = 0; px < pw; ++px) {
                Window w = window(g, py, px);
                if (w.h0 >= w.h1 || w.w0 >= w.w1) {  // a window wholly in the padding
                    yp[py * pw + px] = 0.0f;
                    ap[py * pw + px] = -1;
                    continue;
                }
                int32_t where = w.h0 * g.width + w.w0;
                float best = xp[where];
                for (int h = w.h0; h < w.h1; ++h)
                    for (int c = w.w0; c < w.w1; ++c) {
                        const int32_t i = h * g.width + c;
                        const float v = xp[i];
                        where = v > best ? i : where;  // select, not branch: maxima are unpredictable
                        best = v > best ? v : best;
                    }
                yp[py * pw + px] = best;
                ap[py * pw + px] = where;
            }
    }
}

void max_pool_backward(const float* dy, const int32_t* argmax, const PoolGeometry& g, long planes,
                       float* dx) {
    const long in_plane = static_cast<long>(g.height) * g.width,
               out_plane = static_cast<long>(g.pooled_h()) * g.pooled_w();
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        float* dxp = dx + p * in_plane;
        std::memset(dxp, 0, sizeof(float) * in_plane);
        const float* dyp = dy + p * out_plane;
        const int32_t* ap = argmax + p * out_plane;
        for (long i = 0; i < out_plane; ++i)
            if (ap[i] >= 0) dxp[ap[i]] += dyp[i];
    }
}

void avg_pool_forward(const float* x, const PoolGeometry& g, long planes, float* y) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        const float* xp = x + p * in_plane;
        float* yp = y + p * out_plane;
        for (int py = 0; py < ph; ++py)
            for (int px = 0; px < pw; ++px) {
                Window w = window(g, py, px);
                float sum = 0.0f;
                for (int h = w.h0; h < w.h1; ++h)
                    for (int c = w.w0; c < w.w1; ++c) sum += xp[h * g.width + c];
                yp[py * pw + px] = sum / w.divisor;
            }
    }
}

void avg_pool_backward(const float* dy, const PoolGeometry& g, long planes, float* dx) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    const long in_plane = static_cast<long>(g.height) * g.width, out_plane = static_cast<long>(ph) * pw;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; ++p) {
        float* dxp = dx + p * in_plane;
        std::memset(dxp, 0, sizeof(float) * in_plane);
        const float* dyp = dy + p * out_plane;
        for (int py = 0; py < ph; ++py)
            for (int px = 0; px < pw; ++px) {
                Window w = window(g, py, px);
                float share = dyp[py * pw + px] / w.divisor;
                for (int h = w.h0; h < w.h1; ++h)
                    for (int c = w.w0; c < w.w1; ++c) dxp[h * g.width + c] += share;
            }
    }
}

}  // namespace rudra::kernels
