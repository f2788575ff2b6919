// A net built for one phase and one mini-batch size: layers in file order, blobs and scratch in
// arenas allocated once here, parameters in a ParamStore that a second net (the test net) can
// share. forward()/backward() allocate nothing.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "nn/kernel_options.h"
#include "nn/layer.h"
#include "nn/net_spec.h"
#include "nn/param_store.h"

namespace rudra::nn {

struct NetOptions {
    Phase phase = Phase::Train;
    int batch = 0;                       // 0: the Data/Input layer's own batch size
    std::array<int, 3> data_chw{0, 0, 0};  // shape of one sample for a Data layer
    uint64_t seed = 1;                   // for layers with randomness (dropout)
    KernelOptions kernels;               // backends of the compute layers
    double memory_bytes = 0;             // what the net may take (0: the machine's memory)
};

class Net {
public:
    // With `shared`, parameters are bound to it by (layer name, index) instead of being owned.
    Net(const NetSpec& spec, const NetOptions& options, ParamStore* shared = nullptr);

    float forward();  // returns the weighted sum of the losses
    void backward();  // accumulates into params().grads()
    // The same, calling after_layer(i) once layer i's backward pass is done (from the last layer
    // to the first): from then on the gradients of layer i's parameters are final, and a
    // distributed run may start sending them while the earlier layers compute.
    void backward(const std::function<void(size_t layer)>& after_layer);
    void forward_layer(size_t i);
    void backward_layer(size_t i);
    // The layers' random streams (dropout) as after `passes` forward passes.
    void skip_passes(uint64_t passes);

    size_t num_layers() const { return layers_.size(); }
    const Layer& layer(size_t i) const { return *layers_[i].layer; }
    bool layer_needs_backward(size_t i) const { return layers_[i].needs_backward; }

    const std::vector<Blob>& blobs() const { return blobs_; }
    Blob* find_blob(const std::string& name);
    Blob& blob(const std::string& name);   // throws when missing
    Blob& input_data() { return blobs_[input_data_]; }
    Blob* input_label() { return input_label_ < 0 ? nullptr : &blobs_[input_label_]; }
    // The Data layer's transform in this phase, or null for an Input net.
    const TransformSpec* transform() const { return has_transform_ ? &transform_ : nullptr; }
    int batch() const { return batch_; }
    // The scores the first loss layer reads (for evaluation), or "" when the net has no loss.
    std::string scores_blob() const { return scores_blob_; }

    ParamStore& params() { return *params_; }
    const ParamStore& params() const { return *params_; }

    // The pointer swap of the paper's learners: the layers read their parameters from `arena`
    // (laid out as params().values(), of params().size() floats) from the next pass on, without a
    // copy; null binds them back to params().values(). Gradients stay in params().grads().
    void bind_values(float* arena);
    const float* bound_values() const { return bound_values_; }

private:
    struct LayerEntry {
        std::unique_ptr<Layer> layer;
        std::vector<int> bottoms, tops;
        std::vector<Blob*> bottom_ptrs, top_ptrs;  // fixed once the arenas exist
        std::vector<bool> propagate_down;
        float loss_weight = 0.0f;
        bool needs_backward = false;
        size_t scratch_offset = 0;
        std::vector<size_t> param_offsets;  // each parameter's place in the arena
    };

    int add_blob(const std::string& name, const Shape& shape, const std::string& where);

    std::vector<LayerEntry> layers_;
    std::vector<Blob> blobs_;
    double blob_floats_ = 0;  // sum of the blobs' sizes, checked against the machine's memory
    // Refuses (ConfigError "WHAT need N GiB...") when the blobs' values and gradients and
    // `more_floats` exceed the machine's memory.
    void check_memory(const std::string& what, double more_floats) const;
    double memory_bytes_ = 0;  // NetOptions::memory_bytes
    std::vector<bool> blob_needs_backward_;
    std::unique_ptr<ParamStore> own_params_;
    ParamStore* params_ = nullptr;
    float* bound_values_ = nullptr;  // the arena the layers read their parameters from
    kernels::AlignedBuffer data_arena_, diff_arena_, scratch_arena_;
    TransformSpec transform_;
    bool has_transform_ = false;
    int input_data_ = -1, input_label_ = -1, batch_ = 0;
    std::string scores_blob_;
};

}  // namespace rudra::nn
