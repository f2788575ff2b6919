// What every layer constructor receives, and helpers shared by the spatial layers.
#pragma once
#include <memory>
#include <string>

#include "nn/field_reader.h"
#include "nn/kernel_options.h"
#include "nn/layer.h"

namespace rudra::nn {

struct LayerArgs {
    std::string name;
    Phase phase;
    FieldReader& layer;  // the whole `layer { ... }` block; the constructor reads its *_param
    const KernelOptions& kernels;
};

// Opens the layer's `key` block (e.g. "convolution_param") for strict reading; an absent block
// reads as empty.
class ParamBlock {
public:
    ParamBlock(LayerArgs& args, const std::string& key);
    FieldReader& operator*() { return reader_; }
    FieldReader* operator->() { return &reader_; }

private:
    static const TextMessage kEmpty;
    FieldReader reader_;
};

struct Dims2 {
    int h, w;
};

// Reads Caffe's "<base>_size" / "<base>" (repeated up to twice) or "<base>_h" + "<base>_w".
// `scalar` is the plain name: "kernel_size", "stride" or "pad".
Dims2 read_dims2(FieldReader& r, const std::string& scalar, const std::string& hname,
                 const std::string& wname, int dflt, int lo, bool required);

std::unique_ptr<Layer> make_convolution_layer(LayerArgs& a);
std::unique_ptr<Layer> make_pooling_layer(LayerArgs& a);
std::unique_ptr<Layer> make_relu_layer(LayerArgs& a);
std::unique_ptr<Layer> make_lrn_layer(LayerArgs& a);
std::unique_ptr<Layer> make_inner_product_layer(LayerArgs& a);
std::unique_ptr<Layer> make_dropout_layer(LayerArgs& a);
std::unique_ptr<Layer> make_softmax_layer(LayerArgs& a);
std::unique_ptr<Layer> make_softmax_loss_layer(LayerArgs& a);
std::unique_ptr<Layer> make_accuracy_layer(LayerArgs& a);

}  // namespace rudra::nn
