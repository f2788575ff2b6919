#include <optional>

#include "kernels/lrn.h"
#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

class LrnLayer final : public Layer {
public:
    explicit LrnLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "lrn_param");
        g_.local_size = static_cast<int>(p->integer("local_size", 5, 1, 1 << 16));
        if (g_.local_size % 2 == 0) p->fail("local_size must be odd, got " + std::to_string(g_.local_size));
        g_.alpha = static_cast<float>(p->number("alpha", 1.0));
        g_.beta = static_cast<float>(p->number("beta", 0.75));
        g_.k = static_cast<float>(p->number("k", 1.0));
        g_.across_channels =
            p->enumeration("norm_region", "ACROSS_CHANNELS", {"ACROSS_CHANNELS", "WITHIN_CHANNEL"}) ==
            "ACROSS_CHANNELS";
        p->enumeration("engine", "DEFAULT", {"DEFAULT", "CAFFE", "CUDNN"});
        p->finish();
    }
    const char* type() const override { return "LRN"; }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1 || b[0].rank() != 4) fail("needs one 4-D bottom (N, C, H, W)");
        num_ = b[0][0];
        g_.channels = b[0][1];
        g_.height = b[0][2];
        g_.width = b[0][3];
        kernel_.emplace(g_, num_);
        return {b[0]};
    }
    size_t scratch_floats() const override { return kernel_->scratch_floats(); }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        kernel_->forward(bottom[0]->data, top[0]->data, scratch_);
    }
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        kernel_->backward(bottom[0]->data, top[0]->data, top[0]->diff, bottom[0]->diff, scratch_);
    }
    std::string backend() const override { return kernel_->describe(); }

private:
    kernels::LrnGeometry g_;
    int num_ = 0;
    std::optional<kernels::LrnKernel> kernel_;  // the implementation chosen in setup()
};

}  // namespace

std::unique_ptr<Layer> make_lrn_layer(LayerArgs& a) { return std::make_unique<LrnLayer>(a); }

}  // namespace rudra::nn
