#include "session/data_setup.h"

#include <stdexcept>

namespace rudra::session {

data::TrainTest load_data(const DataOptions& o) {
    data::TrainTest tt = data::load_train_test(o.dir, o.format);
    if (o.train_limit > 0) tt.train.truncate(o.train_limit);
    if (o.test_limit > 0) tt.test.truncate(o.test_limit);
    return tt;
}

data::Transform make_transform(const nn::TransformSpec& spec, const data::Dataset& train,
                               std::vector<float>& mean, std::vector<std::string>& notes) {
    data::Transform t;
    t.scale = spec.scale;
    t.mirror = spec.mirror;
    t.crop = spec.crop_size;
    if (!spec.mean_file.empty()) {
        if (mean.empty()) {
            mean = data::pixel_mean(train);
            notes.push_back("mean_file \"" + spec.mean_file + "\": subtracting the per-pixel mean computed over the " +
                            std::to_string(train.size()) + " training images");
        }
        t.mean = mean;
    } else if (!spec.mean_values.empty()) {
        if (spec.mean_values.size() != 1 && static_cast<int>(spec.mean_values.size()) != train.channels)
            throw std::runtime_error("transform_param: " + std::to_string(spec.mean_values.size()) +
                                     " mean_value entries for " + std::to_string(train.channels) + " channels");
        t.mean = spec.mean_values;
    }
    return t;
}

}  // namespace rudra::session
