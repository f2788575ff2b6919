// The CIFAR-10 binary batch reader.
#include <vector>

#include "data/dataset.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    try {
        data::Dataset d;
        data::append_cifar10(d, std::vector<uint8_t>(data, data + size), fuzz::kInputName);
        fuzz::require(static_cast<int64_t>(d.pixels.size()) == d.size() * d.sample_bytes(), "pixels match the shape");
        for (uint8_t l : d.labels) fuzz::require(l < d.num_classes, "labels below num_classes");
    } catch (const std::exception& e) {
        fuzz::require_named(e);
    }
    return 0;
}
