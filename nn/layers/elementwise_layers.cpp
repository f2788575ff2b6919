// ReLU and dropout: element-wise, both may run in place (top == bottom).
#include <cmath>
#include <optional>
#include <random>

#include "base/mix64.h"
#include "kernels/relu.h"
#include "nn/arena_loop.h"

#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

class ReluLayer final : public Layer {
public:
    explicit ReluLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "relu_param");
        slope_ = static_cast<float>(p->number("negative_slope", 0.0));
        p->enumeration("engine", "DEFAULT", {"DEFAULT", "CAFFE", "CUDNN"});
        p->finish();
        kernel_.emplace(slope_);
    }
    const char* type() const override { return "ReLU"; }
    bool can_run_in_place() const override { return true; }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1) fail("needs one bottom");
        return {b[0]};
    }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        kernel_->forward(bottom[0]->data, top[0]->data, bottom[0]->count());
    }
    // Uses the top (output) sign, which equals the input sign, so in-place works; a negative
    // slope flips the sign, so then the input's.
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        const float* sign = slope_ < 0.0f ? bottom[0]->data : top[0]->data;
        kernel_->backward(sign, top[0]->diff, bottom[0]->diff, bottom[0]->count());
    }
    std::string backend() const override { return kernel_->describe(); }

private:
    float slope_ = 0.0f;
    std::optional<kernels::ReluKernel> kernel_;  // made when the slope is known
};

class DropoutLayer final : public Layer {
public:
    explicit DropoutLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "dropout_param");
        ratio_ = static_cast<float>(p->number("dropout_ratio", 0.5, 0.0, 0.999999));
        p->finish();
    }
    const char* type() const override { return "Dropout"; }
    bool can_run_in_place() const override { return true; }
    void seed(uint64_t s) override { rng_.seed(s); }
    void skip_passes(uint64_t passes) override {
        if (phase_ == Phase::Train) rng_.discard(passes);  // one key per training pass
    }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1) fail("needs one bottom");
        count_ = b[0].count();
        return {b[0]};
    }
    size_t scratch_floats() const override { return phase_ == Phase::Train ? count_ : 0; }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        const float* x = bottom[0]->data;
        float* y = top[0]->data;
        if (phase_ != Phase::Train) {
            if (x != y) std::copy(x, x + count_, y);
            return;
        }
        // Inverted dropout: survivors are scaled by 1/(1-p) so the test net is the identity.
        // Each unit draws from a hash of its index and one key per pass, not from a sequential
        // generator, so the draws split across the threads, vectorise, and come out the same for
        // any number of threads.
        const float keep_scale = 1.0f / (1.0f - ratio_);
        const uint64_t keep_below = static_cast<uint64_t>(std::ldexp(1.0 - static_cast<double>(ratio_), 32));
        const uint64_t key = rng_();
        float* mask = scratch_;
        arena_loop(count_, [&](long i) {
            const uint64_t u = mix64(key ^ static_cast<uint64_t>(i)) >> 32;
            mask[i] = u < keep_below ? keep_scale : 0.0f;
            y[i] = x[i] * mask[i];
        });
    }
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        const float* dy = top[0]->diff;
        float* dx = bottom[0]->diff;
        if (phase_ != Phase::Train) {
            if (dx != dy) std::copy(dy, dy + count_, dx);
            return;
        }
        const float* mask = scratch_;
        arena_loop(count_, [&](long i) { dx[i] = dy[i] * mask[i]; });
    }

private:
    float ratio_ = 0.5f;
    long count_ = 0;
    std::mt19937_64 rng_{1};
};

}  // namespace

std::unique_ptr<Layer> make_relu_layer(LayerArgs& a) { return std::make_unique<ReluLayer>(a); }
std::unique_ptr<Layer> make_dropout_layer(LayerArgs& a) { return std::make_unique<DropoutLayer>(a); }

}  // namespace rudra::nn
