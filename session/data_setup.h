// The data side of a session: load a data set as the command line names it, and the input
// transform of a Data layer's transform_param. Only session/ and tools/ know both data/ and nn/.
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/transform.h"
#include "nn/net_spec.h"

namespace rudra::session {

struct DataOptions {
    std::string dir = "/usr/share/datasets/fashion-mnist";
    std::string format = "auto";
    int64_t train_limit = 0, test_limit = 0;  // 0: all samples
};

data::TrainTest load_data(const DataOptions& o);

// The data/ transform for a Data layer's transform_param. A mean_file stands for "subtract the
// per-pixel mean", which is computed over the training set (Caffe's binaryproto is not read);
// `mean` holds it once computed, so that the TRAIN and TEST transforms share one pass.
data::Transform make_transform(const nn::TransformSpec& spec, const data::Dataset& train,
                               std::vector<float>& mean, std::vector<std::string>& notes);

}  // namespace rudra::session
