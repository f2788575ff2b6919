// All learnable parameters of a net in one contiguous arena, and all their gradients in
// another: a whole model is one flat buffer, which the solver updates and which the
// distributed runtime sends as it is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "nn/filler.h"
#include "nn/tensor.h"

namespace rudra::nn {

struct ParamEntry {
    std::string layer;
    int index = 0;  // 0 = weights, 1 = bias, as Caffe orders them
    Shape shape;
    size_t offset = 0;  // into values() and grads()
    float lr_mult = 1.0f, decay_mult = 1.0f;
    FillerSpec filler;
};

class ParamStore {
public:
    // Offsets are assigned here; each entry starts on a 64-byte boundary.
    explicit ParamStore(std::vector<ParamEntry> entries);

    float* values() { return values_.data(); }
    const float* values() const { return values_.data(); }
    float* grads() { return grads_.data(); }
    const float* grads() const { return grads_.data(); }
    size_t size() const { return values_.size(); }       // floats in the arena, with padding
    size_t learnable_count() const;                       // real parameters, no padding
    const std::vector<ParamEntry>& entries() const { return entries_; }
    const ParamEntry* find(const std::string& layer, int index) const;

    void fill(uint64_t seed);  // every entry from its filler, in order
    void zero_grads() { grads_.zero(); }
    // Identifies the layout (names, shapes, order) so that snapshots of another net are refused.
    uint64_t layout_hash() const;

private:
    std::vector<ParamEntry> entries_;
    kernels::AlignedBuffer values_, grads_;
};

}  // namespace rudra::nn
