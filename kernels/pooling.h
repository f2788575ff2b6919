// Max and average pooling over NCHW planes with Caffe's output-size rule.
#pragma once
#include <cstdint>

namespace rudra::kernels {

struct PoolGeometry {
    int height = 0, width = 0;
    int kernel_h = 1, kernel_w = 1;
    int stride_h = 1, stride_w = 1;
    int pad_h = 0, pad_w = 0;
    int pooled_h() const;
    int pooled_w() const;
};

// Caffe's rule: ceil((in + 2*pad - kernel) / stride) + 1, then drop the last window if it would
// start inside the bottom padding only.
int caffe_pooled_size(int in, int kernel, int pad, int stride);

// planes = num * channels. argmax records the input index (within its plane) of each maximum.
void max_pool_forward(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax);
void max_pool_backward(const float* dy, const int32_t* argmax, const PoolGeometry& g, long planes,
                       float* dx);
// Average pooling divides by the window size clipped to the padded image, as Caffe does.
void avg_pool_forward(const float* x, const PoolGeometry& g, long planes, float* y);
void avg_pool_backward(const float* dy, const PoolGeometry& g, long planes, float* dx);

}  // namespace rudra::kernels
