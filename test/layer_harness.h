// Builds one layer from a prototxt snippet with its own storage, and checks its backward pass
// against central finite differences of the objective <top, r> for a fixed random r.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nn/layer.h"
#include "nn/layer_factory.h"
#include "nn/net_spec.h"

namespace rudra::test {

class LayerHarness {
public:
    LayerHarness(const std::string& layer_block, const std::vector<nn::Shape>& bottom_shapes,
                 nn::Phase phase = nn::Phase::Train, const nn::KernelOptions& kernels = {})
        : spec_(nn::parse_net_spec("layer { " + layer_block + " }", "<test>")) {
        layer_ = nn::make_layer(spec_.layers[0], "<test>", phase, kernels);
        auto tops = layer_->setup(bottom_shapes);
        layer_->prepare();  // as the net does once the layer's memory is checked
        bottoms_.resize(bottom_shapes.size());
        tops_.resize(tops.size());
        for (size_t i = 0; i < bottom_shapes.size(); ++i) make_blob(bottoms_[i], bottom_shapes[i]);
        for (size_t i = 0; i < tops.size(); ++i) make_blob(tops_[i], tops[i]);
        std::vector<nn::ParamView> views;
        for (const auto& d : layer_->params()) {
            params_.emplace_back(d.shape.count(), 0.0f);
            pdiffs_.emplace_back(d.shape.count(), 0.0f);
        }
        for (size_t i = 0; i < params_.size(); ++i) views.push_back({params_[i].data(), pdiffs_[i].data()});
        scratch_.assign(layer_->scratch_floats() + 16, 0.0f);
        layer_->bind(views, scratch_.data());
    }

    nn::Layer& layer() { return *layer_; }
    nn::Blob& bottom(size_t i) { return bottoms_[i]; }
    nn::Blob& top(size_t i) { return tops_[i]; }
    std::vector<float>& param(size_t i) { return params_[i]; }
    std::vector<float>& param_diff(size_t i) { return pdiffs_[i]; }
    size_t num_params() const { return params_.size(); }

    void forward() {
        layer_->seed(seed_);  // same dropout mask on every pass
        layer_->forward(ptrs(bottoms_), ptrs(tops_));
    }
    void backward(const std::vector<bool>& down) { layer_->backward(ptrs(tops_), down, ptrs(bottoms_)); }

    void randomize(std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
        std::uniform_real_distribution<float> u(lo, hi);
        for (auto& b : bottoms_)
            for (int64_t i = 0; i < b.count(); ++i) b.data[i] = u(rng);
        for (auto& p : params_)
            for (auto& v : p) v = u(rng);
    }

    // Checks d<top, r>/d(bottom i) for the bottoms in `check` and every parameter.
    void check_gradients(const std::vector<bool>& check, std::mt19937& rng, double eps = 1e-2, double tol = 5e-3) {
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<std::vector<float>> r(tops_.size());
        for (size_t t = 0; t < tops_.size(); ++t) {
            r[t].resize(tops_[t].count());
            for (auto& v : r[t]) v = u(rng);
        }
        auto objective = [&]() {
            forward();
            double s = 0.0;
            for (size_t t = 0; t < tops_.size(); ++t)
                for (int64_t i = 0; i < tops_[t].count(); ++i) s += static_cast<double>(tops_[t].data[i]) * r[t][i];
            return s;
        };
        objective();
        for (size_t t = 0; t < tops_.size(); ++t)
            for (int64_t i = 0; i < tops_[t].count(); ++i) tops_[t].diff[i] = r[t][i];
        for (auto& d : pdiffs_) std::fill(d.begin(), d.end(), 0.0f);
        backward(check);
        // Copy analytic gradients before the probes overwrite the diffs.
        std::vector<std::vector<float>> bottom_grad(bottoms_.size()), param_grad = pdiffs_;
        for (size_t b = 0; b < bottoms_.size(); ++b)
            bottom_grad[b].assign(bottoms_[b].diff, bottoms_[b].diff + bottoms_[b].count());
        auto probe = [&](float* x, double analytic, const std::string& what) {
            const float saved = *x;
            *x = static_cast<float>(saved + eps);
            const double plus = objective();
            *x = static_cast<float>(saved - eps);
            const double minus = objective();
            *x = saved;
            const double numeric = (plus - minus) / (2 * eps);
            const double scale = std::max({1.0, std::fabs(numeric), std::fabs(analytic)});
            INFO(layer_->type() << " " << what << ": analytic " << analytic << " numeric " << numeric);
            CHECK(std::fabs(numeric - analytic) <= tol * scale);
        };
        for (size_t b = 0; b < bottoms_.size(); ++b) {
            if (!check[b]) continue;
            for (int64_t i = 0; i < bottoms_[b].count(); i += stride(bottoms_[b].count()))
                probe(bottoms_[b].data + i, bottom_grad[b][i], "bottom " + std::to_string(b) + "[" + std::to_string(i) + "]");
        }
        for (size_t p = 0; p < params_.size(); ++p)
            for (size_t i = 0; i < params_[p].size(); i += stride(params_[p].size()))
                probe(params_[p].data() + i, param_grad[p][i], "param " + std::to_string(p) + "[" + std::to_string(i) + "]");
    }

private:
    // Probe at most about 300 entries per array to keep the suite fast.
    static int64_t stride(int64_t n) { return n > 300 ? n / 300 + 1 : 1; }

    void make_blob(nn::Blob& b, const nn::Shape& s) {
        storage_.emplace_back(std::make_unique<std::vector<float>>(s.count() + 1, 0.0f));
        storage_.emplace_back(std::make_unique<std::vector<float>>(s.count() + 1, 0.0f));
        b.shape = s;
        b.data = storage_[storage_.size() - 2]->data();
        b.diff = storage_.back()->data();
    }
    static std::vector<nn::Blob*> ptrs(std::vector<nn::Blob>& v) {
        std::vector<nn::Blob*> out;
        for (auto& b : v) out.push_back(&b);
        return out;
    }

    nn::NetSpec spec_;
    std::unique_ptr<nn::Layer> layer_;
    std::vector<nn::Blob> bottoms_, tops_;
    std::vector<std::unique_ptr<std::vector<float>>> storage_;
    std::vector<std::vector<float>> params_, pdiffs_;
    std::vector<float> scratch_;
    uint64_t seed_ = 7;
};

}  // namespace rudra::test
