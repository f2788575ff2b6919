// Direct (seven-loop) convolution: slow, obviously correct, the reference for every
// GEMM-based path. Layouts are NCHW; weight is [out_channels, in_channels/groups, kh, kw].
#pragma once
#include "kernels/conv_geometry.h"

namespace rudra::kernels {

struct ConvProblem {
    int num = 1;
    ConvGeometry geom;  // channels = all input channels
    int out_channels = 1;
    int groups = 1;
};

// y = conv(x, w) + bias (bias may be null).
void conv_forward_reference(const ConvProblem& p, const float* x, const float* w, const float* bias,
                            float* y);
// dx = conv_transpose(dy, w) (overwrites dx).
void conv_backward_data_reference(const ConvProblem& p, const float* dy, const float* w, float* dx);
// dw += correlation(x, dy); dbias += sum(dy) (dbias may be null).
void conv_backward_weights_reference(const ConvProblem& p, const float* x, const float* dy,
                                     float* dw, float* dbias);

}  // namespace rudra::kernels
