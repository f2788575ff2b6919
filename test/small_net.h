// A small convolutional net and a 6x6 data set of 3 classes, for the tests that compare
// distributed runs with one learner (test_dist, test_decentralized).
#pragma once
#include <cstdint>
#include <random>

#include "data/dataset.h"

namespace rudra::test {

inline constexpr const char* kSmallConvNet = R"(
    layer { name: 'd' type: 'Data' top: 'data' top: 'label' data_param { batch_size: 4 } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 3 kernel_size: 3 pad: 1 weight_filler { type: 'xavier' } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
    layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool' pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
)";

// `samples` 6x6 images: class i % 3 brightens every third pixel from i % 3, over noise.
inline data::Dataset small_dataset(int samples) {
    data::Dataset d;
    d.channels = 1;
    d.height = d.width = 6;
    std::mt19937 rng(3);
    for (int i = 0; i < samples; ++i) {
        d.labels.push_back(static_cast<uint8_t>(i % 3));
        for (int p = 0; p < 36; ++p) d.pixels.push_back(static_cast<uint8_t>(rng() % 64 + (p % 3 == i % 3 ? 150 : 0)));
    }
    return d;
}

}  // namespace rudra::test
