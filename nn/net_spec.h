// A net description read from a Caffe prototxt: the layer list with generic fields checked,
// the data-side settings (batch size, transform) kept as plain values for data/ to use, and
// the layer-specific blocks kept for the layer factory.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "nn/prototxt.h"
#include "nn/tensor.h"

namespace rudra::nn {

struct TransformSpec {
    float scale = 1.0f;
    std::string mean_file;  // non-empty: subtract a per-pixel mean
    std::vector<float> mean_values;
    bool mirror = false;
    int crop_size = 0;
};

struct ParamMult {
    float lr_mult = 1.0f, decay_mult = 1.0f;
};

struct LayerSpec {
    std::string name, type;
    int line = 0;
    std::vector<std::string> bottoms, tops;
    std::vector<ParamMult> param_mults;
    std::vector<float> loss_weights;
    std::vector<Phase> include, exclude;
    TextMessage message;  // the whole block, for the layer's own *_param
    // type "Data" or "ImageData": where the samples come from, as the file names it
    int batch_size = 0;
    TransformSpec transform;
    std::string source;       // data_param / image_data_param source ("": none named)
    std::string backend;      // Data: "LMDB", "LEVELDB" or "" (not given)
    std::string root_folder;  // ImageData: prefix of the list's paths
    int new_height = 0, new_width = 0;
    bool is_color = true;
    // type "Input"
    std::vector<Shape> input_shapes;

    bool applies_to(Phase p) const;
    bool is_data() const { return type == "Data" || type == "ImageData"; }
    bool is_input() const { return type == "Input"; }
};

struct NetSpec {
    std::string file, name;
    std::vector<LayerSpec> layers;
    std::vector<std::string> notes;  // fields accepted but ignored, with their place

    // The Data layer used in `phase`, or null.
    const LayerSpec* data_layer(Phase phase) const;
};

NetSpec parse_net_spec(const std::string& text, const std::string& file);
NetSpec load_net_spec(const std::string& path);

}  // namespace rudra::nn
