#include "data/transform.h"

namespace rudra::data {
namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace

std::vector<float> pixel_mean(const Dataset& d) {
    const int64_t per = d.sample_bytes();
    std::vector<double> sum(per, 0.0);
    std::vector<uint8_t> scratch;
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
        const uint64_t r = splitmix64(key);
        if (t.crop) {
            y0 = static_cast<int>(r % (d.height - oh + 1));
            x0 = static_cast<int>((r >> 20) % (d.width - ow + 1));
        }
        flip = t.mirror && ((r >> 40) & 1);
    }
    const int64_t plane = static_cast<int64_t>(d.height) * d.width;
    const bool per_pixel = static_cast<int64_t>(t.mean.size()) == plane * d.channels;
    for (int c = 0; c < d.channels; ++c)
        for (int y = 0; y < oh; ++y)
            for (int x = 0; x < ow; ++x) {
                const int sy = y + y0, sx = flip ? (x0 + ow - 1 - x) : (x + x0);
                const int64_t si = c * plane + static_cast<int64_t>(sy) * d.width + sx;
                float m = 0.0f;
                if (per_pixel) m = t.mean[si];
                else if (!t.mean.empty()) m = t.mean[t.mean.size() == 1 ? 0 : c];
                out[(static_cast<int64_t>(c) * oh + y) * ow + x] = (src[si] - m) * t.scale;
            }
}

}  // namespace rudra::data
