// The one place that maps a layer type name to its implementation.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/kernel_options.h"
#include "nn/layer.h"
#include "nn/net_spec.h"

namespace rudra::nn {

// Builds the layer from its block; strict: unknown fields are errors naming file and line.
std::unique_ptr<Layer> make_layer(const LayerSpec& spec, const std::string& file, Phase phase,
                                  const KernelOptions& kernels);

// Compute layer types this build knows (Data and Input are handled by the net itself).
std::vector<std::string> known_layer_types();

}  // namespace rudra::nn
