// Glue between the parts: read a solver or net file, load the data set, build the nets and the
// input transform. Only tools/ knows both data/ and nn/.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/transform.h"
#include "nn/net.h"
#include "nn/net_spec.h"
#include "nn/solver_spec.h"

namespace rudra::tools {

// A prototxt that has a top-level `net:` or `base_lr:` is a solver; anything else is a net.
bool is_solver_file(const std::string& path);

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

// Copies `count` samples starting at `first` (test order, no randomness) into the net's input
// blobs; rows past the end of the set are zero with label 0. Returns how many rows are real.
int fill_test_batch(nn::Net& net, const data::Dataset& d, const data::Transform& t, int64_t first);

struct EvalResult {
    double accuracy = 0.0, loss = 0.0;
    int64_t images = 0;
};

// Top-1 accuracy and mean cross-entropy over the whole set, read from the scores blob that the
// net's loss layer takes.
EvalResult evaluate(nn::Net& net, const data::Dataset& d, const data::Transform& t);

std::string with_thousands(uint64_t n);

}  // namespace rudra::tools
