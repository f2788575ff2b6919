// Turning stored bytes into network input: subtract the mean, scale, crop, mirror (Caffe's
// DataTransformer). Random crops and mirrors in training come from a generator keyed by the
// sample's position in the stream, so a resumed run sees the same inputs.
#pragma once
#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace rudra::data {

struct Transform {
    float scale = 1.0f;
    std::vector<float> mean;  // empty, one value per channel, or one per pixel (C*H*W of the source)
    bool mirror = false;
    int crop = 0;             // 0: no crop

    int out_h(const Dataset& d) const { return crop ? crop : d.height; }
    int out_w(const Dataset& d) const { return crop ? crop : d.width; }
};

// Per-pixel mean over all samples of the set, [C*H*W] (a streamed set is read through once).
std::vector<float> pixel_mean(const Dataset& d);

// Writes a sample's pixels `src` [C, H, W] of set `d`'s shape as floats [C, out_h, out_w].
// train: random crop and mirror keyed by `key`; test: centre crop, no mirror.
void transform_pixels(const Dataset& d, const uint8_t* src, const Transform& t, bool train, uint64_t key, float* out);
// The same for sample `index` of an in-memory set.
void transform_sample(const Dataset& d, int64_t index, const Transform& t, bool train, uint64_t key, float* out);

}  // namespace rudra::data
