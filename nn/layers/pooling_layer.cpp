#include <cstdint>
#include <optional>

#include "kernels/pooling.h"
#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

class PoolingLayer final : public Layer {
public:
    explicit PoolingLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "pooling_param");
        max_ = p->enumeration("pool", "MAX", {"MAX", "AVE", "STOCHASTIC"}) == "MAX";
        if (p->has("pool") && p->field("pool")->text == "STOCHASTIC") p->fail("STOCHASTIC pooling is not supported");
        global_ = p->boolean("global_pooling", false);
        Dims2 k = read_dims2(*p, "kernel_size", "kernel_h", "kernel_w", 1, 1, !global_);
        Dims2 s = read_dims2(*p, "stride", "stride_h", "stride_w", 1, 1, false);
        Dims2 pad = read_dims2(*p, "pad", "pad_h", "pad_w", 0, 0, false);
        p->enumeration("engine", "DEFAULT", {"DEFAULT", "CAFFE", "CUDNN"});  // accepted: one CPU engine here
        p->finish();
        g_.kernel_h = k.h;
        g_.kernel_w = k.w;
        g_.stride_h = s.h;
        g_.stride_w = s.w;
        g_.pad_h = pad.h;
        g_.pad_w = pad.w;
        if (g_.pad_h >= g_.kernel_h || g_.pad_w >= g_.kernel_w) p->fail("pad must be smaller than kernel");
    }

    const char* type() const override { return "Pooling"; }

    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1 || b[0].rank() != 4) fail("needs one 4-D bottom (N, C, H, W)");
        g_.height = b[0][2];
        g_.width = b[0][3];
        if (global_) {
            g_.kernel_h = g_.height;
            g_.kernel_w = g_.width;
            g_.stride_h = g_.stride_w = 1;
            g_.pad_h = g_.pad_w = 0;
        }
        if (const std::string why = kernels::geometry_problem(g_); !why.empty()) fail(why);
        planes_ = static_cast<long>(b[0][0]) * b[0][1];
        top_ = Shape{b[0][0], b[0][1], g_.pooled_h(), g_.pooled_w()};
        kernel_.emplace(max_ ? kernels::PoolMethod::Max : kernels::PoolMethod::Average, g_);
        return {top_};
    }

    size_t scratch_floats() const override { return max_ ? top_.count() : 0; }  // argmax as int32

    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        kernel_->forward(bottom[0]->data, planes_, top[0]->data, max_ ? argmax() : nullptr);
    }

    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        kernel_->backward(top[0]->diff, max_ ? argmax() : nullptr, planes_, bottom[0]->diff);
    }

    std::string backend() const override { return kernel_->describe(); }

private:
    int32_t* argmax() const { return reinterpret_cast<int32_t*>(scratch_); }

    bool max_ = true, global_ = false;
    kernels::PoolGeometry g_;
    long planes_ = 0;
    Shape top_;
    std::optional<kernels::PoolKernel> kernel_;  // implementations chosen in setup()
};

}  // namespace

std::unique_ptr<Layer> make_pooling_layer(LayerArgs& a) { return std::make_unique<PoolingLayer>(a); }

}  // namespace rudra::nn
