// Local response normalisation, Caffe's two regions:
//   ACROSS_CHANNELS: s = k + alpha/size * sum of x^2 over `size` neighbouring channels
//   WITHIN_CHANNEL:  s = 1 + alpha/size^2 * sum of x^2 over a size x size spatial window
// y = x * s^-beta.
#pragma once
#include <cstddef>
#include <string>

#include "kernels/impl_list.h"

namespace rudra::kernels {

struct LrnGeometry {
    int channels = 0, height = 0, width = 0;
    int local_size = 5;
    float alpha = 1.0f, beta = 0.75f, k = 1.0f;
    bool across_channels = true;
};

// One LRN layer's passes, one implementation for both (chosen once from the gate, kernels/isa.h):
//   avx512_narrow: within a channel, rows up to 16 wide, local_size up to 15, beta 0.75; a row is
//                  one register, and backward computes the scale again from x instead of
//                  keeping it (which costs less than writing it and reading it back)
//   portable:      any; keeps the scale for the backward pass within a channel (across
//                  channels backward computes it again, as avx512_narrow does)
class LrnKernel {
public:
    // Arrays are [num, channels, height, width].
    LrnKernel(const LrnGeometry& g, int num, const IsaGate& gate = isa_gate());
    // Working memory both passes share: the scale kept from forward.
    size_t scratch_floats() const { return scratch_floats_; }
    void forward(const float* x, float* y, float* scratch) const;
    // dx = dy * s^-beta - 2*alpha*beta/norm * x * window_sum(dy * y / s); scratch as forward left it.
    void backward(const float* x, const float* y, const float* dy, float* dx, float* scratch) const;

    const ImplChoice& impl() const { return choice_; }
    std::string describe() const;  // "avx512_narrow", or "portable (avx512_narrow: ...)"
    // The implementations the gate allows, in order, and why the others are not (for listings).
    static std::string implementations(const IsaGate& gate);

    // The two passes of one implementation (kernels/lrn_narrow.cpp, lrn.cpp).
    struct Passes {
        void (*forward)(const float* x, const LrnGeometry& g, int num, float* y, float* scratch);
        void (*backward)(const float* x, const float* y, const float* dy, const LrnGeometry& g, int num, float* dx,
                         float* scratch);
        size_t (*scratch_floats)(const LrnGeometry& g, int num);  // what forward keeps for backward
    };

private:
    LrnGeometry g_;
    int num_;
    const Passes* passes_;
    ImplChoice choice_;
    size_t scratch_floats_;
};

namespace lrn {
// avx512_narrow's passes (nullptr outside x86-64) and the shapes it takes ("" when it does).
const LrnKernel::Passes* narrow_avx512();
std::string narrow_declines(const LrnGeometry& g);
}  // namespace lrn

}  // namespace rudra::kernels
