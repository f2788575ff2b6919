// Max and average pooling over NCHW planes with Caffe's output-size rule.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/impl_list.h"

namespace rudra::kernels {

struct PoolGeometry {
    int height = 0, width = 0;
    int kernel_h = 1, kernel_w = 1;
    int stride_h = 1, stride_w = 1;
    int pad_h = 0, pad_w = 0;
    int pooled_h() const;
    int pooled_w() const;
};

// Why `g` cannot run, or empty: a field out of range or a size past an int (computed in 64 bits).
std::string geometry_problem(const PoolGeometry& g);

// Caffe's rule: ceil((in + 2*pad - kernel) / stride) + 1, then drop the last window if it would
// start inside the bottom padding only.
int caffe_pooled_size(int in, int kernel, int pad, int stride);

enum class PoolMethod { Max, Average };

// One pooling layer's passes, each implementation chosen once from the gate (kernels/isa.h), in
// this order:
//   forward: avx512_narrow (rows up to 32 wide in registers: at most 16 outputs a row, kernel
//            width up to 16, column stride 1 or 2, padding below the kernel), avx512_rows, avx2_rows
//            (a vector of outputs a step, column stride 1 or 2, kernel width up to 16), portable
//   backward: average avx512_narrow, portable; max portable (a scatter through argmax)
// Every one keeps Caffe's rules: the window clipped to the image, average pooling divided by the
// window clipped to the padded image, and the first maximum in row-major order among equals.
class PoolKernel {
public:
    PoolKernel(PoolMethod method, const PoolGeometry& g, const IsaGate& gate = isa_gate());
    // planes = num * channels. argmax (max pooling; ignored for average) receives the input index
    // (within its plane) of each maximum, -1 for a window wholly in the padding (output 0).
    void forward(const float* x, long planes, float* y, int32_t* argmax) const;
    // dx is overwritten.
    void backward(const float* dy, const int32_t* argmax, long planes, float* dx) const;

    const ImplChoice& forward_impl() const { return forward_choice_; }
    const ImplChoice& backward_impl() const { return backward_choice_; }
    std::string describe() const;  // "fwd avx512_narrow, bwd portable" with the reasons for any passed over
    // The implementations the gate allows, in order, and why the others are not (for listings).
    static std::string implementations(PoolMethod method, const IsaGate& gate);

private:
    using ForwardFn = void (*)(const float*, const PoolGeometry&, long, float*, int32_t*);
    using BackwardFn = void (*)(const float*, const int32_t*, const PoolGeometry&, long, float*);
    bool max_;
    PoolGeometry g_;
    ForwardFn forward_;
    BackwardFn backward_;
    ImplChoice forward_choice_, backward_choice_;
};

}  // namespace rudra::kernels
