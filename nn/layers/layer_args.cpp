#include "nn/layers/layer_args.h"

#include <stdexcept>

namespace rudra::nn {

const TextMessage ParamBlock::kEmpty{};

ParamBlock::ParamBlock(LayerArgs& args, const std::string& key)
    : reader_([&]() -> const TextMessage& {
                  const TextMessage* m = args.layer.message(key);
                  return m ? *m : kEmpty;
              }(),
              args.layer.file(), args.layer.what() + " " + key) {}

Dims2 read_dims2(FieldReader& r, const std::string& scalar, const std::string& hname,
                 const std::string& wname, int dflt, int lo, bool required) {
    auto plain = r.integers(scalar, lo, 1 << 20);
    bool has_hw = r.has(hname) || r.has(wname);
    int h = static_cast<int>(r.integer(hname, -1, lo, 1 << 20));
    int w = static_cast<int>(r.integer(wname, -1, lo, 1 << 20));
    if (!plain.empty() && has_hw) r.fail("give either '" + scalar + "' or '" + hname + "'/'" + wname + "', not both");
    if (plain.size() > 2) r.fail("'" + scalar + "' given more than twice (2-D only)");
    if (plain.size() == 1) return {static_cast<int>(plain[0]), static_cast<int>(plain[0])};
    if (plain.size() == 2) return {static_cast<int>(plain[0]), static_cast<int>(plain[1])};
    if (has_hw) {
        if (h < 0 || w < 0) r.fail("'" + hname + "' and '" + wname + "' must be given together");
        return {h, w};
    }
    if (required) r.require(scalar);
    return {dflt, dflt};
}

void Layer::fail(const std::string& problem) const {
    throw std::runtime_error("layer '" + name_ + "' (" + type() + "): " + problem);
}

}  // namespace rudra::nn
