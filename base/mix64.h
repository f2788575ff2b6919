// SplitMix64's finaliser: 64 well-mixed bits from any 64-bit counter or key. Random draws that
// must be the same whoever computes them (a sample's crop and mirror on any decode thread, a
// dropout unit's mask on any OpenMP thread) hash their position instead of advancing a shared
// generator.
#pragma once
#include <cstdint>

namespace rudra {

inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace rudra
