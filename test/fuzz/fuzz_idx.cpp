// The IDX reader (MNIST, Fashion-MNIST): the first byte says how many of the bytes after it
// form the label file; the rest is the image file.
#include <algorithm>
#include <vector>

#include "data/dataset.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    if (size == 0) return 0;
    const size_t label_bytes = std::min<size_t>(data[0], size - 1);
    const std::vector<uint8_t> labels(data + 1, data + 1 + label_bytes);
    const std::vector<uint8_t> images(data + 1 + label_bytes, data + size);
    try {
        const data::Dataset d = data::parse_idx(images, fuzz::kInputName + "-images", labels, fuzz::kInputName + "-labels");
        fuzz::require(d.size() > 0, "a data set read has samples");
        int64_t bytes = 0;
        fuzz::require(!__builtin_mul_overflow(d.size(), d.sample_bytes(), &bytes) &&
                          static_cast<int64_t>(d.pixels.size()) == bytes,
                      "pixels match the shape");
        for (uint8_t l : d.labels) fuzz::require(l < d.num_classes, "labels below num_classes");
    } catch (const std::exception& e) {
        fuzz::require_named(e);
    }
    return 0;
}
