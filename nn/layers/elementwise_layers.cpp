// ReLU and dropout: element-wise, both may run in place (top == bottom).
#include <random>

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
    }
    const char* type() const override { return "ReLU"; }
    bool can_run_in_place() const override { return true; }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1) fail("needs one bottom");
        return {b[0]};
    }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        const float* x = bottom[0]->data;
        float* y = top[0]->data;
        const long n = bottom[0]->count();
        const float s = slope_;
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : s * x[i];
    }
    // Uses the top (output) sign, which equals the input sign, so in-place works.
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        const float* y = top[0]->data;
        const float* dy = top[0]->diff;
        float* dx = bottom[0]->diff;
        const long n = bottom[0]->count();
        const float s = slope_;
        const bool leaky_negative = s < 0.0f;  // a negative slope flips the sign, so use the input
        const float* x = bottom[0]->data;
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; ++i) {
            const bool pos = leaky_negative ? x[i] > 0.0f : y[i] > 0.0f;
            dx[i] = pos ? dy[i] : s * dy[i];
        }
    }

private:
    float slope_ = 0.0f;
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
        const float keep_scale = 1.0f / (1.0f - ratio_);
        std::bernoulli_distribution keep(1.0 - ratio_);
        float* mask = scratch_;
        for (long i = 0; i < count_; ++i) mask[i] = keep(rng_) ? keep_scale : 0.0f;
        for (long i = 0; i < count_; ++i) y[i] = x[i] * mask[i];
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
        for (long i = 0; i < count_; ++i) dx[i] = dy[i] * scratch_[i];
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
