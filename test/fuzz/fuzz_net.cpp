// Net construction from a fuzzed prototxt: shape inference, parameter and scratch sizing, the
// memory guard (capped at 256 MiB here), and for small nets one forward and backward pass over
// zero inputs, so that the kernels meet whatever geometry the layers accepted. Refusals must
// name the file; an accepted net's blobs are all counted and finite in size.
#include <cmath>

#include "nn/net.h"
#include "nn/net_spec.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    if (size < 2) return 0;
    const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
    nn::NetSpec spec;
    try {
        spec = nn::parse_net_spec(text, fuzz::kInputName);
    } catch (const std::exception& e) {
        fuzz::require_named(e);
        return 0;
    }
    for (const nn::Phase phase : {nn::Phase::Train, nn::Phase::Test}) {
        nn::NetOptions opt;
        opt.phase = phase;
        // A Data layer's sample shape and the batch from the first two bytes: 1-4 channels of
        // 1-16 pixels a side, mini-batches of 1-4.
        opt.data_chw = {1 + data[0] % 4, 1 + (data[0] / 4) % 16, 1 + (data[1] % 16)};
        opt.batch = 1 + (data[1] / 16) % 4;
        opt.memory_bytes = 256.0 * (1 << 20);
        try {
            nn::Net net(spec, opt);
            double floats = 0;
            for (const nn::Blob& b : net.blobs()) {
                fuzz::require(b.count() >= 0, "a blob's count is not negative");
                floats += static_cast<double>(b.count());
            }
            if (floats + static_cast<double>(net.params().size()) <= 2e5) {
                net.forward();
                if (phase == nn::Phase::Train) net.backward();
            }
        } catch (const std::exception& e) {
            fuzz::require_named(e);
        }
    }
    return 0;
}
