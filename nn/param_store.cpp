#include "nn/param_store.h"

#include <random>

namespace rudra::nn {
namespace {

std::vector<ParamEntry> with_offsets(std::vector<ParamEntry> entries, size_t& total) {
    total = 0;
    for (auto& e : entries) {
        e.offset = total;
        total += (static_cast<size_t>(e.shape.count()) + 15) / 16 * 16;
    }
    return entries;
}

size_t total_of(const std::vector<ParamEntry>& entries) {
    size_t t = 0;
    with_offsets(entries, t);
    return t;
}

}  // namespace

ParamStore::ParamStore(std::vector<ParamEntry> entries)
    : values_(total_of(entries)), grads_(total_of(entries)) {
    size_t total = 0;
    entries_ = with_offsets(std::move(entries), total);
}

size_t ParamStore::learnable_count() const {
    size_t n = 0;
    for (const auto& e : entries_) n += static_cast<size_t>(e.shape.count());
    return n;
}

const ParamEntry* ParamStore::find(const std::string& layer, int index) const {
    for (const auto& e : entries_)
        if (e.layer == layer && e.index == index) return &e;
    return nullptr;
}

void ParamStore::fill(uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (const auto& e : entries_) nn::fill(e.filler, e.shape, values_.data() + e.offset, rng);
}

uint64_t ParamStore::layout_hash() const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    auto mix = [&h](const void* p, size_t n) {
        const unsigned char* b = static_cast<const unsigned char*>(p);
        for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    };
    for (const auto& e : entries_) {
        mix(e.layer.data(), e.layer.size());
        mix(&e.index, sizeof e.index);
        for (int d : e.shape.dims) mix(&d, sizeof d);
    }
    return h;
}

}  // namespace rudra::nn
