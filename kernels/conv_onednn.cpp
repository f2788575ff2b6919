// Convolution on oneDNN: its primitives choose their own (blocked) layouts; the engine's NCHW
// tensors are reordered in and out around each call, as any framework with NCHW tensors must.
// Primitives, reorders and the intermediate buffers are made once, when the kernel is made.
#include <algorithm>
#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/aligned_buffer.h"
#include "kernels/conv.h"
#include "kernels/onednn_isa.h"

namespace rudra::kernels {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// One tensor argument of a primitive: the caller's NCHW buffer and, when the primitive wants
// another layout, a buffer of that layout with the reorder between them.
class Port {
public:
    Port(const memory::desc& user, const memory::desc& wanted, const dnnl::engine& eng, bool input)
        : user_(user, eng, DNNL_MEMORY_NONE) {
        if (wanted == user) return;
        inner_.emplace(wanted, eng);
        reorder_.emplace(input ? dnnl::reorder(user_, *inner_) : dnnl::reorder(*inner_, user_));
    }
    // Binds the caller's buffer; for an input, brings it into the primitive's layout.
    memory& in(const float* p, dnnl::stream& s) {
        user_.set_data_handle(const_cast<float*>(p));
        if (!inner_) return user_;
        reorder_->execute(s, user_, *inner_);
        return *inner_;
    }
    memory& out(float* p) {
        user_.set_data_handle(p);
        return inner_ ? *inner_ : user_;
    }
    // After the primitive ran: an output in another layout goes back to the caller's buffer.
    void finish(dnnl::stream& s) {
        if (inner_) reorder_->execute(s, *inner_, user_);
    }

private:
    memory user_;
    std::optional<memory> inner_;
    std::optional<dnnl::reorder> reorder_;
};

class OnednnConv final : public ConvKernel {
public:
    // bf16: the primitives take and give BF16 tensors (the reorders round the engine's FP32 ones
    // and widen the results), with FP32 weight and bias gradients.
    OnednnConv(const ConvProblem& p, bool bf16) : eng_((cap_onednn_isa(), dnnl::engine::kind::cpu), 0), strm_(eng_) {
        const ConvGeometry& g = p.geom;
        const memory::dim N = p.num, C = g.channels, H = g.height, W = g.width, O = p.out_channels,
                          OH = g.out_h(), OW = g.out_w(), G = p.groups;
        const memory::dims strides{g.stride_h, g.stride_w}, dil{g.dilation_h - 1, g.dilation_w - 1},
            pad_l{g.pad_h, g.pad_w},
            pad_r{(OH - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1 - H - g.pad_h,
                  (OW - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1 - W - g.pad_w};
        const memory::desc x_user({N, C, H, W}, dt::f32, tag::nchw), y_user({N, O, OH, OW}, dt::f32, tag::nchw),
            b_user({O}, dt::f32, tag::x),
            w_user = G == 1 ? memory::desc({O, C, g.kernel_h, g.kernel_w}, dt::f32, tag::oihw)
                            : memory::desc({G, O / G, C / G, g.kernel_h, g.kernel_w}, dt::f32, tag::goihw);
        const dt t = bf16 ? dt::bf16 : dt::f32;
        const memory::desc x_any(x_user.dims(), t, tag::any), y_any(y_user.dims(), t, tag::any),
            w_any(w_user.dims(), t, tag::any), dw_any(w_user.dims(), dt::f32, tag::any);
        const auto algo = dnnl::algorithm::convolution_direct;

        fwd_pd_ = dnnl::convolution_forward::primitive_desc(
            {dnnl::prop_kind::forward_training, algo, x_any, w_any, b_user, y_any, strides, dil, pad_l, pad_r}, eng_);
        fwd_nobias_pd_ = dnnl::convolution_forward::primitive_desc(
            {dnnl::prop_kind::forward_training, algo, x_any, w_any, y_any, strides, dil, pad_l, pad_r}, eng_);
        bwd_data_pd_ = dnnl::convolution_backward_data::primitive_desc(
            {algo, x_any, w_any, y_any, strides, dil, pad_l, pad_r}, eng_, fwd_pd_);
        bwd_weights_pd_ = dnnl::convolution_backward_weights::primitive_desc(
            {algo, x_any, dw_any, b_user, y_any, strides, dil, pad_l, pad_r}, eng_, fwd_pd_);
        fwd_ = dnnl::convolution_forward(fwd_pd_);
        fwd_nobias_ = dnnl::convolution_forward(fwd_nobias_pd_);
        bwd_data_ = dnnl::convolution_backward_data(bwd_data_pd_);
        bwd_weights_ = dnnl::convolution_backward_weights(bwd_weights_pd_);

        f_x_.emplace(x_user, fwd_pd_.src_desc(), eng_, true);
        f_w_.emplace(w_user, fwd_pd_.weights_desc(), eng_, true);
        f_y_.emplace(y_user, fwd_pd_.dst_desc(), eng_, false);
        f_b_.emplace(b_user, b_user, eng_, true);
        n_x_.emplace(x_user, fwd_nobias_pd_.src_desc(), eng_, true);
        n_w_.emplace(w_user, fwd_nobias_pd_.weights_desc(), eng_, true);
        n_y_.emplace(y_user, fwd_nobias_pd_.dst_desc(), eng_, false);
        d_dy_.emplace(y_user, bwd_data_pd_.diff_dst_desc(), eng_, true);
        d_w_.emplace(w_user, bwd_data_pd_.weights_desc(), eng_, true);
        d_dx_.emplace(x_user, bwd_data_pd_.diff_src_desc(), eng_, false);
        w_x_.emplace(x_user, bwd_weights_pd_.src_desc(), eng_, true);
        w_dy_.emplace(y_user, bwd_weights_pd_.diff_dst_desc(), eng_, true);
        w_dw_.emplace(w_user, bwd_weights_pd_.diff_weights_desc(), eng_, false);
        w_db_.emplace(b_user, b_user, eng_, false);
        wcount_ = static_cast<size_t>(O) * (C / G) * g.kernel_h * g.kernel_w;
        dw_tmp_ = AlignedBuffer(wcount_);
        db_tmp_ = AlignedBuffer(static_cast<size_t>(O));
        shared_dy_ = bwd_data_pd_.diff_dst_desc() == bwd_weights_pd_.diff_dst_desc();
    }

    void forward(const float* x, const float* w, const float* bias, float* y) override {
        if (bias) {
            fwd_.execute(strm_, {{DNNL_ARG_SRC, f_x_->in(x, strm_)}, {DNNL_ARG_WEIGHTS, f_w_->in(w, strm_)},
                                 {DNNL_ARG_BIAS, f_b_->in(bias, strm_)}, {DNNL_ARG_DST, f_y_->out(y)}});
            f_y_->finish(strm_);
        } else {
            fwd_nobias_.execute(strm_, {{DNNL_ARG_SRC, n_x_->in(x, strm_)}, {DNNL_ARG_WEIGHTS, n_w_->in(w, strm_)},
                                        {DNNL_ARG_DST, n_y_->out(y)}});
            n_y_->finish(strm_);
        }
        strm_.wait();
    }

    void backward_data(const float* dy, const float* w, float* dx) override { data_pass(d_dy_->in(dy, strm_), w, dx); }

    void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
        weights_pass(x, w_dy_->in(dy, strm_), dw, db);
    }

    // dy is brought into the backward passes' layout once when both read the same one.
    void backward(const float* x, const float* dy, const float* w, float* dx, float* dw, float* db) override {
        if (!dx || !shared_dy_) {
            ConvKernel::backward(x, dy, w, dx, dw, db);
            return;
        }
        memory& dy_blocked = d_dy_->in(dy, strm_);
        weights_pass(x, dy_blocked, dw, db);
        data_pass(dy_blocked, w, dx);
    }

    // oneDNN's own names for what runs, e.g. "fwd jit:avx512_core, bwd_data ..., bwd_weights ...".
    std::string describe() const override {
        return std::string("fwd ") + fwd_pd_.impl_info_str() + ", bwd_data " + bwd_data_pd_.impl_info_str() +
               ", bwd_weights " + bwd_weights_pd_.impl_info_str();
    }

private:
    void data_pass(memory& dy, const float* w, float* dx) {
        bwd_data_.execute(strm_, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, d_w_->in(w, strm_)},
                                  {DNNL_ARG_DIFF_SRC, d_dx_->out(dx)}});
        d_dx_->finish(strm_);
        strm_.wait();
    }

    void weights_pass(const float* x, memory& dy, float* dw, float* db) {
        bwd_weights_.execute(strm_, {{DNNL_ARG_SRC, w_x_->in(x, strm_)}, {DNNL_ARG_DIFF_DST, dy},
                                     {DNNL_ARG_DIFF_WEIGHTS, w_dw_->out(dw_tmp_.data())},
                                     {DNNL_ARG_DIFF_BIAS, w_db_->out(db_tmp_.data())}});
        w_dw_->finish(strm_);
        strm_.wait();
        // The engine's gradients accumulate; oneDNN's overwrite.
        for (size_t i = 0; i < wcount_; ++i) dw[i] += dw_tmp_.data()[i];
        if (db)
            for (size_t i = 0; i < db_tmp_.size(); ++i) db[i] += db_tmp_.data()[i];
    }

    dnnl::engine eng_;
    dnnl::stream strm_;
    dnnl::convolution_forward::primitive_desc fwd_pd_, fwd_nobias_pd_;
    dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
    dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd_;
    dnnl::convolution_forward fwd_, fwd_nobias_;
    dnnl::convolution_backward_data bwd_data_;
    dnnl::convolution_backward_weights bwd_weights_;
    std::optional<Port> f_x_, f_w_, f_y_, f_b_, n_x_, n_w_, n_y_, d_dy_, d_w_, d_dx_, w_x_, w_dy_, w_dw_, w_db_;
    size_t wcount_ = 0;
    AlignedBuffer dw_tmp_, db_tmp_;
    bool shared_dy_ = false;  // both backward passes want dy in the same layout
};

}  // namespace

namespace {

dnnl::cpu_isa onednn_cap_for(Isa level) {
    switch (level) {
        case Isa::Avx512Bf16: return dnnl::cpu_isa::avx512_core_bf16;
        case Isa::Avx512: return dnnl::cpu_isa::avx512_core;
        case Isa::Avx2: return dnnl::cpu_isa::avx2;
        default: return dnnl::cpu_isa::sse41;
    }
}

}  // namespace

const char* onednn_cap_name(Isa level) {
    switch (level) {
        case Isa::Avx512Bf16: return "avx512_core_bf16";
        case Isa::Avx512: return "avx512_core";
        case Isa::Avx2: return "avx2";
        default: return "sse41";
    }
}

void cap_onednn_isa() {
    static const bool applied = [] {
        const IsaGate& gate = isa_gate();
        if (!gate.capped()) return false;
        return dnnl::set_max_cpu_isa(onednn_cap_for(gate.top())) == dnnl::status::success;
    }();
    (void)applied;
}

std::unique_ptr<ConvKernel> make_onednn_conv(const ConvProblem& p, bool bf16) {
    return std::make_unique<OnednnConv>(p, bf16);
}

}  // namespace rudra::kernels
