#include "data/transform.h"

#include "base/mix64.h"

namespace rudra::data {

std::vector<float> pixel_mean(const Dataset& d) {
    const int64_t per = d.sample_bytes();
    std::vector<double> sum(per, 0.0);
    ReadScratch scratch;
    for (int64_t i = 0; i < d.size(); ++i) {
        const uint8_t* s = nullptr;
        d.read(i, scratch, s);
        for (int64_t p = 0; p < per; ++p) sum[p] += s[p];
    }
    std::vector<float> mean(per);
    for (int64_t p = 0; p < per; ++p) mean[p] = d.size() ? static_cast<float>(sum[p] / d.size()) : 0.0f;
    return mean;
}

void transform_sample(const Dataset& d, int64_t index, const Transform& t, bool train, uint64_t key, float* out) {
    transform_pixels(d, d.sample(index), t, train, key, out);
}

void transform_pixels(const Dataset& d, const uint8_t* src, const Transform& t, bool train, uint64_t key, float* out) {
    const int oh = t.out_h(d), ow = t.out_w(d);
    int y0 = (d.height - oh) / 2, x0 = (d.width - ow) / 2;
    bool flip = false;
    if (train && (t.crop || t.mirror)) {
        const uint64_t r = mix64(key);
        if (t.crop) {
            y0 = static_cast<int>(r % (d.height - oh + 1));
            x0 = static_cast<int>((r >> 20) % (d.width - ow + 1));
        }
        flip = t.mirror && ((r >> 40) & 1);
    }
    const int64_t plane = static_cast<int64_t>(d.height) * d.width;
    const bool per_pixel = static_cast<int64_t>(t.mean.size()) == plane * d.channels;
    const float scale = t.scale;
    // Row by row with the choices made outside the loops, so that each row is one vectorised
    // pass: a mirrored row is written from its end (output x takes column x0 + ow - 1 - x).
    for (int c = 0; c < d.channels; ++c) {
        const float channel_mean = per_pixel || t.mean.empty() ? 0.0f : t.mean[t.mean.size() == 1 ? 0 : c];
        for (int y = 0; y < oh; ++y) {
            const int64_t first = c * plane + static_cast<int64_t>(y + y0) * d.width + x0;
            const uint8_t* s = src + first;
            float* o = out + (static_cast<int64_t>(c) * oh + y) * ow;
            if (per_pixel) {
                const float* m = t.mean.data() + first;
                if (flip)
                    for (int x = 0; x < ow; ++x) o[ow - 1 - x] = (s[x] - m[x]) * scale;
                else
                    for (int x = 0; x < ow; ++x) o[x] = (s[x] - m[x]) * scale;
            } else if (flip) {
                for (int x = 0; x < ow; ++x) o[ow - 1 - x] = (s[x] - channel_mean) * scale;
            } else {
                for (int x = 0; x < ow; ++x) o[x] = (s[x] - channel_mean) * scale;
            }
        }
    }
}

}  // namespace rudra::data
