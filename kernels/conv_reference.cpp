#include "kernels/conv_reference.h"

#include <cstring>

namespace rudra::kernels {
namespace {

// Calls f(n, oc, oy, ox, ic, ky, kx, x_index, w_index, y_index) for every valid tap.
template <class F>
void for_each_tap(const ConvProblem& p, F&& f) {
    const ConvGeometry& g = p.geom;
    const int oh = g.out_h(), ow = g.out_w();
    const int icg = g.channels / p.groups, ocg = p.out_channels / p.groups;
    for (int n = 0; n < p.num; ++n)
        for (int oc = 0; oc < p.out_channels; ++oc) {
            const int grp = oc / ocg;
            for (int oy = 0; oy < oh; ++oy)
                for (int ox = 0; ox < ow; ++ox)
                    for (int ic = 0; ic < icg; ++ic)
                        for (int ky = 0; ky < g.kernel_h; ++ky)
                            for (int kx = 0; kx < g.kernel_w; ++kx) {
                                const int iy = oy * g.stride_h - g.pad_h + ky * g.dilation_h;
                                const int ix = ox * g.stride_w - g.pad_w + kx * g.dilation_w;
                                if (iy < 0 || iy >= g.height || ix < 0 || ix >= g.width) continue;
                                const long xi = ((static_cast<long>(n) * g.channels + grp * icg + ic) *
                                                     g.height + iy) * g.width + ix;
                                const long wi = ((static_cast<long>(oc) * icg + ic) * g.kernel_h + ky) *
                                                    g.kernel_w + kx;
                                const long yi = ((static_cast<long>(n) * p.out_channels + oc) * oh + oy) *
                                                    ow + ox;
                                f(xi, wi, yi);
                            }
        }
}

long output_count(const ConvProblem& p) {
    return static_cast<long>(p.num) * p.out_channels * p.geom.out_h() * p.geom.out_w();
}

}  // namespace

void conv_forward_reference(const ConvProblem& p, const float* x, const float* w, const float* bias,
                            float* y) {
    const long plane = static_cast<long>(p.geom.out_h()) * p.geom.out_w();
    for (long i = 0; i < output_count(p); ++i)
        y[i] = bias ? bias[(i / plane) % p.out_channels] : 0.0f;
    for_each_tap(p, [&](long xi, long wi, long yi) { y[yi] += x[xi] * w[wi]; });
}

void conv_backward_data_reference(const ConvProblem& p, const float* dy, const float* w, float* dx) {
    std::memset(dx, 0, sizeof(float) * p.num * p.geom.channels * p.geom.height * p.geom.width);
    for_each_tap(p, [&](long xi, long wi, long yi) { dx[xi] += dy[yi] * w[wi]; });
}

void conv_backward_weights_reference(const ConvProblem& p, const float* x, const float* dy,
                                     float* dw, float* dbias) {
    for_each_tap(p, [&](long xi, long wi, long yi) { dw[wi] += x[xi] * dy[yi]; });
    if (!dbias) return;
    const long plane = static_cast<long>(p.geom.out_h()) * p.geom.out_w();
    for (long i = 0; i < output_count(p); ++i) dbias[(i / plane) % p.out_channels] += dy[i];
}

}  // namespace rudra::kernels
