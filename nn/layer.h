// The layer contract. A layer is built from its prototxt block, told its bottom shapes once
// (setup), given views into the net's parameter and scratch arenas (bind), and then runs
// forward/backward without allocating. Backward accumulates parameter gradients and
// overwrites bottom gradients.
#pragma once
#include <string>
#include <vector>

#include "nn/filler.h"
#include "nn/tensor.h"

namespace rudra::nn {

struct ParamDecl {
    Shape shape;
    FillerSpec filler;
};

struct ParamView {
    float* data = nullptr;
    float* diff = nullptr;
};

class Layer {
public:
    Layer(std::string name, Phase phase) : name_(std::move(name)), phase_(phase) {}
    virtual ~Layer() = default;
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

    const std::string& name() const { return name_; }
    virtual const char* type() const = 0;

    // Checks bottom shapes, declares parameters, returns top shapes. Throws std::runtime_error
    // with the layer's name when the shapes do not fit.
    virtual std::vector<Shape> setup(const std::vector<Shape>& bottoms) = 0;
    const std::vector<ParamDecl>& params() const { return param_decls_; }
    // Floats of working memory the layer needs, known after setup.
    virtual size_t scratch_floats() const { return 0; }
    // Floats the layer will hold of its own (its kernels' buffers: an estimate from above), known
    // after setup; the net refuses the layer when they would not fit, and then calls prepare(),
    // which builds them.
    virtual double own_floats() const { return 0.0; }
    virtual void prepare() {}
    void bind(std::vector<ParamView> params, float* scratch) {
        param_views_ = std::move(params);
        scratch_ = scratch;
    }
    // Points parameter i's values elsewhere (Net::bind_values); its gradient stays. Layers read
    // the views at every pass and keep nothing derived from the values between passes.
    void rebind_values(size_t i, float* data) { param_views_.at(i).data = data; }

    virtual void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) = 0;
    virtual void backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                          const std::vector<Blob*>& bottom) = 0;

    virtual bool can_backward() const { return true; }
    virtual bool is_loss() const { return false; }
    virtual bool can_run_in_place() const { return false; }
    // Layers with randomness (dropout) take a seed from the net.
    virtual void seed(uint64_t) {}
    // Advances the layer's random stream past `passes` training passes: a learner that goes on
    // from the middle of its run draws what it would have drawn there.
    virtual void skip_passes(uint64_t /*passes*/) {}
    // The kernel backend the layer runs on and why, for `rudra time` ("" when it has no choice).
    virtual std::string backend() const { return ""; }
    // What the layer's products round their inputs to, for `rudra time`: "bf16" where its GEMMs
    // take BF16 inputs (--precision bf16), "fp32" otherwise, "bf16/fp32" where forward and
    // backward-weights differ from backward-data. Activations, gradients and sums stay FP32.
    virtual std::string precision() const { return "fp32"; }

protected:
    [[noreturn]] void fail(const std::string& problem) const;

    std::string name_;
    Phase phase_;
    std::vector<ParamDecl> param_decls_;
    std::vector<ParamView> param_views_;
    float* scratch_ = nullptr;
};

}  // namespace rudra::nn
