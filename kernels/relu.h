// ReLU with Caffe's negative_slope: y = x > 0 ? x : slope x; backward dx = dy where the sign is
// positive, slope dy elsewhere. One portable loop compiled for each level (portable_avx512,
// portable_avx2, portable: kernels/isa_target.h), chosen once from the gate. A memory-bound loop
// like this runs at the width of the vectors it is compiled for: on a Sapphire Rapids core the
// baseline's SSE2 took twice as long as AVX-512 over cifar10_full's activations.
#pragma once
#include <string>

#include "kernels/impl_list.h"

namespace rudra::kernels {

class ReluKernel {
public:
    explicit ReluKernel(float slope, const IsaGate& gate = isa_gate());
    // n floats, split over the OpenMP threads; y may be x.
    void forward(const float* x, float* y, long n) const;
    // sign: what decides each branch (the layer's output, or its input for a negative slope);
    // dx may be dy.
    void backward(const float* sign, const float* dy, float* dx, long n) const;

    const ImplChoice& impl() const { return choice_; }
    std::string describe() const;
    // The implementations the gate allows, in order, and why the others are not (for listings).
    static std::string implementations(const IsaGate& gate);

    struct Passes {
        void (*forward)(const float* x, float* y, long n, float slope);
        void (*backward)(const float* sign, const float* dy, float* dx, long n, float slope);
    };

private:
    float slope_;
    const Passes* passes_;
    ImplChoice choice_;
};

}  // namespace rudra::kernels
