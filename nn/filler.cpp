#include "nn/filler.h"

#include <cmath>

namespace rudra::nn {

FillerSpec read_filler(const TextMessage* msg, const std::string& file, const std::string& what) {
    FillerSpec s;
    if (!msg) return s;
    FieldReader r(*msg, file, what);
    s.type = r.string("type", "constant");
    if (s.type != "constant" && s.type != "gaussian" && s.type != "uniform" && s.type != "xavier" &&
        s.type != "msra")
        r.fail("filler type '" + s.type + "' is not supported (constant, gaussian, uniform, xavier, msra)");
    s.value = static_cast<float>(r.number("value", 0.0));
    s.mean = static_cast<float>(r.number("mean", 0.0));
    s.std = static_cast<float>(r.number("std", 1.0, 0.0));
    s.min = static_cast<float>(r.number("min", 0.0));
    s.max = static_cast<float>(r.number("max", 1.0));
    s.variance_norm = r.enumeration("variance_norm", "FAN_IN", {"FAN_IN", "FAN_OUT", "AVERAGE"});
    if (s.min > s.max) r.fail("filler min > max");
    r.finish();
    return s;
}

void fill(const FillerSpec& spec, const Shape& shape, float* data, std::mt19937_64& rng) {
    const int64_t n = shape.count();
    if (spec.type == "constant") {
        for (int64_t i = 0; i < n; ++i) data[i] = spec.value;
        return;
    }
    if (spec.type == "gaussian") {
        std::normal_distribution<float> d(spec.mean, spec.std);
        for (int64_t i = 0; i < n; ++i) data[i] = d(rng);
        return;
    }
    if (spec.type == "uniform") {
        std::uniform_real_distribution<float> d(spec.min, spec.max);
        for (int64_t i = 0; i < n; ++i) data[i] = d(rng);
        return;
    }
    // xavier / msra: scale from fan-in / fan-out, as Caffe computes them.
    const double fan_in = shape.rank() > 0 && shape[0] ? static_cast<double>(n) / shape[0] : 1.0;
    const double fan_out = shape.rank() > 1 && shape[1] ? static_cast<double>(n) / shape[1] : 1.0;
    double fan = fan_in;
    if (spec.variance_norm == "FAN_OUT") fan = fan_out;
    if (spec.variance_norm == "AVERAGE") fan = (fan_in + fan_out) / 2.0;
    if (spec.type == "xavier") {
        const float scale = static_cast<float>(std::sqrt(3.0 / fan));
        std::uniform_real_distribution<float> d(-scale, scale);
        for (int64_t i = 0; i < n; ++i) data[i] = d(rng);
    } else {
        std::normal_distribution<float> d(0.0f, static_cast<float>(std::sqrt(2.0 / fan)));
        for (int64_t i = 0; i < n; ++i) data[i] = d(rng);
    }
}

}  // namespace rudra::nn
