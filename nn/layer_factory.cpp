#include "nn/layer_factory.h"

#include <map>

#include "nn/config_error.h"
#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

using Maker = std::unique_ptr<Layer> (*)(LayerArgs&);

const std::map<std::string, Maker>& makers() {
    static const std::map<std::string, Maker> m = {
        {"Convolution", make_convolution_layer},  {"Pooling", make_pooling_layer},
        {"ReLU", make_relu_layer},                {"LRN", make_lrn_layer},
        {"InnerProduct", make_inner_product_layer}, {"Dropout", make_dropout_layer},
        {"Softmax", make_softmax_layer},          {"SoftmaxWithLoss", make_softmax_loss_layer},
        {"Accuracy", make_accuracy_layer},
    };
    return m;
}

// Fields of LayerParameter that the net spec has already read.
const char* const kGenericFields[] = {"name", "type", "bottom", "top", "param", "include",
                                      "exclude", "loss_weight", "phase"};

}  // namespace

std::vector<std::string> known_layer_types() {
    std::vector<std::string> out;
    for (const auto& [k, v] : makers()) out.push_back(k);
    return out;
}

std::unique_ptr<Layer> make_layer(const LayerSpec& spec, const std::string& file, Phase phase,
                                  const KernelOptions& kernels) {
    auto it = makers().find(spec.type);
    if (it == makers().end()) {
        std::string list;
        for (const auto& t : known_layer_types()) list += (list.empty() ? "" : ", ") + t;
        throw ConfigError(file, spec.line, 1,
                          "layer '" + spec.name + "': unknown layer type '" + spec.type + "' (known: Data, Input, " +
                              list + ")");
    }
    FieldReader reader(spec.message, file, "layer '" + spec.name + "' (" + spec.type + ")");
    for (const char* f : kGenericFields) reader.accept(f);
    LayerArgs args{spec.name, phase, reader, kernels};
    std::unique_ptr<Layer> layer = it->second(args);
    reader.finish();
    return layer;
}

}  // namespace rudra::nn
