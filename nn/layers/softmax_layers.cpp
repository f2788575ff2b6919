// Softmax, softmax + cross-entropy loss, and top-k accuracy over [N, C, spatial...] scores.
#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

struct ClassLayout {
    int outer = 0, classes = 0;
    long inner = 1;
};

ClassLayout class_layout(const Shape& s) {
    return {s[0], s.rank() > 1 ? s[1] : 1, s.rank() > 2 ? static_cast<long>(s.count_from(2)) : 1};
}

// prob = softmax(scores) along the class axis.
void softmax(const float* x, const ClassLayout& l, float* y) {
    for (int n = 0; n < l.outer; ++n)
        for (long i = 0; i < l.inner; ++i) {
            const float* xs = x + n * l.classes * l.inner + i;
            float* ys = y + n * l.classes * l.inner + i;
            float mx = xs[0];
            for (int c = 1; c < l.classes; ++c) mx = std::max(mx, xs[c * l.inner]);
            float sum = 0.0f;
            for (int c = 0; c < l.classes; ++c) sum += ys[c * l.inner] = std::exp(xs[c * l.inner] - mx);
            for (int c = 0; c < l.classes; ++c) ys[c * l.inner] /= sum;
        }
}

void check_axis(ParamBlock& p) {
    if (p->integer("axis", 1, 1, 1) != 1) p->fail("only axis 1 is supported");
}

class SoftmaxLayer final : public Layer {
public:
    explicit SoftmaxLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "softmax_param");
        check_axis(p);
        p->enumeration("engine", "DEFAULT", {"DEFAULT", "CAFFE", "CUDNN"});
        p->finish();
    }
    const char* type() const override { return "Softmax"; }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1 || b[0].rank() < 2) fail("needs one bottom of at least 2 axes");
        layout_ = class_layout(b[0]);
        return {b[0]};
    }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        softmax(bottom[0]->data, layout_, top[0]->data);
    }
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        const ClassLayout& l = layout_;
        for (int n = 0; n < l.outer; ++n)
            for (long i = 0; i < l.inner; ++i) {
                const long o = n * l.classes * l.inner + i;
                float dot = 0.0f;
                for (int c = 0; c < l.classes; ++c) dot += top[0]->diff[o + c * l.inner] * top[0]->data[o + c * l.inner];
                for (int c = 0; c < l.classes; ++c)
                    bottom[0]->diff[o + c * l.inner] =
                        top[0]->data[o + c * l.inner] * (top[0]->diff[o + c * l.inner] - dot);
            }
    }

private:
    ClassLayout layout_;
};

int label_at(const Layer& layer, const float* labels, long i, int classes) {
    const float v = labels[i];
    const int k = static_cast<int>(v);
    if (k != v || k < 0 || k >= classes)
        throw std::runtime_error("layer '" + layer.name() + "': label " + std::to_string(v) + " at index " +
                                 std::to_string(i) + " is not a class in [0, " + std::to_string(classes) + ")");
    return k;
}

void check_label_shape(const Layer& layer, const std::vector<Shape>& b) {
    if (b.size() != 2) throw std::runtime_error("layer '" + layer.name() + "': needs bottoms (scores, label)");
    const ClassLayout l = class_layout(b[0]);
    if (b[1].count() != l.outer * l.inner)
        throw std::runtime_error("layer '" + layer.name() + "': label count " + std::to_string(b[1].count()) +
                                 " does not match scores " + b[0].str());
}

class SoftmaxWithLossLayer final : public Layer {
public:
    explicit SoftmaxWithLossLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        {
            ParamBlock p(a, "softmax_param");
            check_axis(p);
            p->finish();
        }
        ParamBlock p(a, "loss_param");
        has_ignore_ = p->has("ignore_label");
        ignore_ = static_cast<int>(p->integer("ignore_label", -1, -(1 << 30), 1 << 30));
        normalization_ = p->enumeration("normalization", "VALID", {"FULL", "VALID", "BATCH_SIZE", "NONE"});
        if (p->has("normalize") && !p->boolean("normalize", true)) normalization_ = "BATCH_SIZE";
        p->finish();
    }
    const char* type() const override { return "SoftmaxWithLoss"; }
    bool is_loss() const override { return true; }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        check_label_shape(*this, b);
        layout_ = class_layout(b[0]);
        count_ = b[0].count();
        return {Shape{}};
    }
    size_t scratch_floats() const override { return count_; }  // probabilities
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        softmax(bottom[0]->data, layout_, scratch_);
        double loss = 0.0;
        long valid = 0;
        for (int n = 0; n < layout_.outer; ++n)
            for (long i = 0; i < layout_.inner; ++i) {
                const long li = n * layout_.inner + i;
                if (has_ignore_ && bottom[1]->data[li] == ignore_) continue;
                const int k = label_at(*this, bottom[1]->data, li, layout_.classes);
                const float p = scratch_[(n * layout_.classes + k) * layout_.inner + i];
                loss -= std::log(std::max(p, 1e-37f));
                ++valid;
            }
        valid_ = valid;
        top[0]->data[0] = static_cast<float>(loss / normalizer());
    }
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        if (!down[0]) return;
        float* dx = bottom[0]->diff;
        std::copy(scratch_, scratch_ + count_, dx);
        for (int n = 0; n < layout_.outer; ++n)
            for (long i = 0; i < layout_.inner; ++i) {
                const long li = n * layout_.inner + i;
                if (has_ignore_ && bottom[1]->data[li] == ignore_) {
                    for (int c = 0; c < layout_.classes; ++c) dx[(n * layout_.classes + c) * layout_.inner + i] = 0.0f;
                    continue;
                }
                const int k = label_at(*this, bottom[1]->data, li, layout_.classes);
                dx[(n * layout_.classes + k) * layout_.inner + i] -= 1.0f;
            }
        const float scale = top[0]->diff[0] / static_cast<float>(normalizer());
        for (long i = 0; i < count_; ++i) dx[i] *= scale;
    }

private:
    double normalizer() const {
        if (normalization_ == "FULL") return static_cast<double>(layout_.outer) * layout_.inner;
        if (normalization_ == "BATCH_SIZE") return layout_.outer;
        if (normalization_ == "NONE") return 1.0;
        return std::max<long>(valid_, 1);
    }

    ClassLayout layout_;
    long count_ = 0, valid_ = 0;
    bool has_ignore_ = false;
    int ignore_ = -1;
    std::string normalization_;
};

class AccuracyLayer final : public Layer {
public:
    explicit AccuracyLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "accuracy_param");
        top_k_ = static_cast<int>(p->integer("top_k", 1, 1, 1 << 20));
        check_axis(p);
        has_ignore_ = p->has("ignore_label");
        ignore_ = static_cast<int>(p->integer("ignore_label", -1, -(1 << 30), 1 << 30));
        p->finish();
    }
    const char* type() const override { return "Accuracy"; }
    bool can_backward() const override { return false; }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        check_label_shape(*this, b);
        layout_ = class_layout(b[0]);
        if (top_k_ > layout_.classes) fail("top_k exceeds the number of classes");
        return {Shape{}};
    }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        long correct = 0, valid = 0;
        const float* x = bottom[0]->data;
        for (int n = 0; n < layout_.outer; ++n)
            for (long i = 0; i < layout_.inner; ++i) {
                const long li = n * layout_.inner + i;
                if (has_ignore_ && bottom[1]->data[li] == ignore_) continue;
                const int k = label_at(*this, bottom[1]->data, li, layout_.classes);
                const float truth = x[(n * layout_.classes + k) * layout_.inner + i];
                // Correct when fewer than top_k classes score strictly higher than the label.
                int higher = 0;
                for (int c = 0; c < layout_.classes; ++c)
                    if (x[(n * layout_.classes + c) * layout_.inner + i] > truth) ++higher;
                if (higher < top_k_) ++correct;
                ++valid;
            }
        top[0]->data[0] = valid ? static_cast<float>(correct) / valid : 0.0f;
    }
    void backward(const std::vector<Blob*>&, const std::vector<bool>&, const std::vector<Blob*>&) override {}

private:
    ClassLayout layout_;
    int top_k_ = 1;
    bool has_ignore_ = false;
    int ignore_ = -1;
};

}  // namespace

std::unique_ptr<Layer> make_softmax_layer(LayerArgs& a) { return std::make_unique<SoftmaxLayer>(a); }
std::unique_ptr<Layer> make_softmax_loss_layer(LayerArgs& a) { return std::make_unique<SoftmaxWithLossLayer>(a); }
std::unique_ptr<Layer> make_accuracy_layer(LayerArgs& a) { return std::make_unique<AccuracyLayer>(a); }

}  // namespace rudra::nn
