// Local response normalisation, Caffe's two regions:
//   ACROSS_CHANNELS: s = k + alpha/size * sum of x^2 over `size` neighbouring channels
//   WITHIN_CHANNEL:  s = 1 + alpha/size^2 * sum of x^2 over a size x size spatial window
// y = x * s^-beta.
#pragma once

namespace rudra::kernels {

struct LrnGeometry {
    int channels = 0, height = 0, width = 0;
    int local_size = 5;
    float alpha = 1.0f, beta = 0.75f, k = 1.0f;
    bool across_channels = true;
};

// scale receives s (kept for backward) where the general path runs; the narrow planes of
// kernels/lrn_narrow.h compute it again in the backward pass and leave scale alone.
// All arrays are [num, channels, height, width].
void lrn_forward(const float* x, const LrnGeometry& g, int num, float* y, float* scale);
// dx = dy * s^-beta - 2*alpha*beta/norm * x * window_sum(dy * y / s); work has x's size (across
// channels only: within a channel each plane is worked on in a small buffer of the thread).
void lrn_backward(const float* x, const float* y, const float* scale, const float* dy,
                  const LrnGeometry& g, int num, float* dx, float* work);

}  // namespace rudra::kernels
