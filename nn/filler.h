// Weight initialisation as Caffe's FillerParameter describes it.
#pragma once
#include <random>
#include <string>

#include "nn/field_reader.h"
#include "nn/tensor.h"

namespace rudra::nn {

struct FillerSpec {
    std::string type = "constant";  // constant | gaussian | uniform | xavier | msra
    float value = 0.0f;
    float mean = 0.0f, std = 1.0f;
    float min = 0.0f, max = 1.0f;
    std::string variance_norm = "FAN_IN";  // FAN_IN | FAN_OUT | AVERAGE
};

// Reads a weight_filler / bias_filler block; null means the default (constant 0).
FillerSpec read_filler(const TextMessage* msg, const std::string& file, const std::string& what);

void fill(const FillerSpec& spec, const Shape& shape, float* data, std::mt19937_64& rng);

}  // namespace rudra::nn
