// A small convolutional net and a 6x6 data set of 3 classes, for the tests that compare
// distributed runs with one learner (test_dist, test_decentralized).
#pragma once
#include <cstdint>
#include <random>
#include <string>

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

// kSmallConvNet reading pixels scaled to [0, 1], as a run's Data layer would (transform_param).
inline std::string small_conv_net_scaled() {
    std::string net = kSmallConvNet;
    const std::string data_param = "data_param { batch_size: 4 }";
    net.replace(net.find(data_param), data_param.size(), data_param + " transform_param { scale: 0.00390625 }");
    return net;
}

// 48 training images (12 mini-batches of 4 an epoch) and 12 test images of small_dataset.
inline data::TrainTest small_train_test() {
    data::TrainTest sets;
    sets.train = small_dataset(48);
    sets.test = small_dataset(12);
    sets.train.num_classes = sets.test.num_classes = 3;
    sets.format = "idx";
    return sets;
}

}  // namespace rudra::test
