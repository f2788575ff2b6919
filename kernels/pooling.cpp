// Caffe's output size, and PoolKernel: the ordered implementation lists and the choice.
#include "kernels/pooling.h"

#include "kernels/impl_list.h"
#include "kernels/pool_impls.h"

namespace rudra::kernels {

int caffe_pooled_size(int in, int kernel, int pad, int stride) {
    int span = in + 2 * pad - kernel;
    int out = (span + stride - 1) / stride + 1;  // ceil for span >= 0
    if (span < 0) out = 1;
    if (pad > 0 && (out - 1) * stride >= in + pad) --out;
    return out;
}

std::string geometry_problem(const PoolGeometry& g) {
    if (g.height < 1 || g.width < 1 || g.kernel_h < 1 || g.kernel_w < 1 || g.stride_h < 1 || g.stride_w < 1 ||
        g.pad_h < 0 || g.pad_w < 0)
        return "input, kernel and stride must be at least 1 and padding at least 0";
    constexpr int64_t kIntMax = 2147483647;
    const int64_t span_h = int64_t{g.height} + 2 * int64_t{g.pad_h}, span_w = int64_t{g.width} + 2 * int64_t{g.pad_w};
    if (span_h + g.stride_h > kIntMax || span_w + g.stride_w > kIntMax || int64_t{g.height} * g.width > kIntMax)
        return "an input of " + std::to_string(g.height) + "x" + std::to_string(g.width) + " with padding " +
               std::to_string(g.pad_h) + "x" + std::to_string(g.pad_w) + " is past the kernels' int sizes";
    return "";
}

int PoolGeometry::pooled_h() const { return caffe_pooled_size(height, kernel_h, pad_h, stride_h); }
int PoolGeometry::pooled_w() const { return caffe_pooled_size(width, kernel_w, pad_w, stride_w); }

namespace {

using Forward = Impl<PoolGeometry, pool::ForwardFn>;
using Backward = Impl<PoolGeometry, pool::BackwardFn>;

// The lists, most specialised first; the portable loops last, compiled for each level. Max
// pooling's backward pass is a scatter through argmax, which every forward implementation writes
// the same way.
struct Lists {
    Forward max_forward[6], avg_forward[6];
    Backward max_backward[3], avg_backward[4];
};

const Lists& lists() {
    static const Lists l = [] {
        const pool::Kind narrow = pool::narrow_avx512(), rows = pool::rows_avx512(), rows2 = pool::rows_avx2();
        const pool::Kind p512 = pool::portable(Isa::Avx512), p2 = pool::portable(Isa::Avx2),
                         p = pool::portable(Isa::Reference);
        return Lists{
            {{"avx512_narrow", Isa::Avx512, narrow.max_forward, narrow.declines},
             {"avx512_rows", Isa::Avx512, rows.max_forward, rows.declines},
             {"portable_avx512", Isa::Avx512, p512.max_forward},
             {"avx2_rows", Isa::Avx2, rows2.max_forward, rows2.declines},
             {"portable_avx2", Isa::Avx2, p2.max_forward},
             {"portable", Isa::Reference, p.max_forward}},
            {{"avx512_narrow", Isa::Avx512, narrow.avg_forward, narrow.declines},
             {"avx512_rows", Isa::Avx512, rows.avg_forward, rows.declines},
             {"portable_avx512", Isa::Avx512, p512.avg_forward},
             {"avx2_rows", Isa::Avx2, rows2.avg_forward, rows2.declines},
             {"portable_avx2", Isa::Avx2, p2.avg_forward},
             {"portable", Isa::Reference, p.avg_forward}},
            {{"portable_avx512", Isa::Avx512, p512.max_backward},
             {"portable_avx2", Isa::Avx2, p2.max_backward},
             {"portable", Isa::Reference, p.max_backward}},
            {{"avx512_narrow", Isa::Avx512, narrow.avg_backward, narrow.declines},
             {"portable_avx512", Isa::Avx512, p512.avg_backward},
             {"portable_avx2", Isa::Avx2, p2.avg_backward},
             {"portable", Isa::Reference, p.avg_backward}}};
    }();
    return l;
}

}  // namespace

PoolKernel::PoolKernel(PoolMethod method, const PoolGeometry& g, const IsaGate& gate)
    : max_(method == PoolMethod::Max), g_(g) {
    const Lists& l = lists();
    forward_ = max_ ? choose_impl(l.max_forward, g, gate, forward_choice_)
                    : choose_impl(l.avg_forward, g, gate, forward_choice_);
    backward_ = max_ ? choose_impl(l.max_backward, g, gate, backward_choice_)
                     : choose_impl(l.avg_backward, g, gate, backward_choice_);
}

void PoolKernel::forward(const float* x, long planes, float* y, int32_t* argmax) const {
    forward_(x, g_, planes, y, max_ ? argmax : nullptr);
}

void PoolKernel::backward(const float* dy, const int32_t* argmax, long planes, float* dx) const {
    backward_(dy, argmax, g_, planes, dx);
}

std::string PoolKernel::describe() const {
    return "fwd " + forward_choice_.describe() + ", bwd " + backward_choice_.describe();
}

std::string PoolKernel::implementations(PoolMethod method, const IsaGate& gate) {
    const Lists& l = lists();
    return method == PoolMethod::Max ? "forward " + describe_impls(l.max_forward, gate) + "; backward " +
                                           describe_impls(l.max_backward, gate)
                                     : "forward " + describe_impls(l.avg_forward, gate) + "; backward " +
                                           describe_impls(l.avg_backward, gate);
}

}  // namespace rudra::kernels
