// The Caffe prototxt reader: an input is read both as a net and as a solver.
#include "nn/net_spec.h"
#include "nn/solver_spec.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const nn::NetSpec net = nn::parse_net_spec(text, fuzz::kInputName);
        for (const nn::LayerSpec& l : net.layers) fuzz::require(!l.type.empty(), "every layer has a type");
    } catch (const std::exception& e) {
        fuzz::require_named(e);
    }
    try {
        nn::parse_solver_spec(text, fuzz::kInputName);
    } catch (const std::exception& e) {
        fuzz::require_named(e);
    }
    return 0;
}
