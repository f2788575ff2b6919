#include "tools/model_setup.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "nn/field_reader.h"
#include "nn/prototxt.h"

namespace rudra::tools {

bool is_solver_file(const std::string& path) {
    nn::TextMessage m = nn::parse_prototxt_file(path);
    for (const auto& f : m.fields)
        if (f.name == "net" || f.name == "base_lr" || f.name == "train_net") return true;
    return false;
}

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

int fill_test_batch(nn::Net& net, const data::Dataset& d, const data::Transform& t, int64_t first) {
    nn::Blob& x = net.input_data();
    nn::Blob* y = net.input_label();
    const int batch = net.batch();
    const int64_t per = x.count() / batch;
    const int real = static_cast<int>(std::min<int64_t>(batch, d.size() - first));
    for (int i = 0; i < batch; ++i) {
        if (i < real) {
            data::transform_sample(d, first + i, t, /*train=*/false, 0, x.data + i * per);
            if (y) y->data[i] = d.labels[first + i];
        } else {
            std::memset(x.data + i * per, 0, sizeof(float) * per);
            if (y) y->data[i] = 0.0f;
        }
    }
    return real;
}

EvalResult evaluate(nn::Net& net, const data::Dataset& d, const data::Transform& t) {
    const std::string scores_name = net.scores_blob();
    if (scores_name.empty()) throw std::runtime_error("the test net has no loss layer to read scores from");
    nn::Blob& scores = net.blob(scores_name);
    const int classes = static_cast<int>(scores.count() / net.batch());
    EvalResult r;
    int64_t correct = 0;
    double loss = 0.0;
    for (int64_t first = 0; first < d.size(); first += net.batch()) {
        const int real = fill_test_batch(net, d, t, first);
        net.forward();
        for (int i = 0; i < real; ++i) {
            const float* s = scores.data + static_cast<int64_t>(i) * classes;
            const int label = d.labels[first + i];
            const int best = static_cast<int>(std::max_element(s, s + classes) - s);
            correct += best == label;
            const float mx = s[best];
            double sum = 0.0;
            for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(s[c] - mx));
            loss += std::log(sum) - (s[label] - mx);
        }
        r.images += real;
    }
    r.accuracy = r.images ? static_cast<double>(correct) / r.images : 0.0;
    r.loss = r.images ? loss / r.images : 0.0;
    return r;
}

std::string with_thousands(uint64_t n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), 1, ',');
    return s;
}

}  // namespace rudra::tools
