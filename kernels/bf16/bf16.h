// BF16: the upper half of an IEEE single, 8 exponent bits and 8 significand bits. A product of
// two BF16 values is exact in FP32, which is why BF16 inputs with FP32 accumulation lose only the
// rounding of the inputs. Conversions round to nearest, ties to even, as the CPUs' instructions do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/isa.h"

namespace rudra::kernels {

using bf16 = uint16_t;

// Round to nearest even; a NaN stays a (quiet) NaN, an overflow becomes an infinity.
inline bf16 to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16>((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<bf16>(u >> 16);
}

inline float from_bf16(bf16 h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

// x rounded to the nearest BF16, as a float.
inline float round_to_bf16(float x) { return from_bf16(to_bf16(x)); }

// Whole arrays, vectorised where the gate allows avx512_bf16 (whose instruction also rounds
// denormal inputs to zero; the portable loop keeps them).
struct Bf16Convert {
    const char* name;  // "avx512_bf16", "portable"
    void (*to_bf16)(const float* x, bf16* out, size_t n);
    void (*from_bf16)(const bf16* x, float* out, size_t n);
};
const Bf16Convert& bf16_convert_for(const IsaGate& gate);
// Each build's implementations: nullptr where the architecture has none.
const Bf16Convert* avx512_bf16_convert();
const Bf16Convert* portable_bf16_convert();
// The process gate's (isa_gate()).
void to_bf16(const float* x, bf16* out, size_t n);
void from_bf16(const bf16* x, float* out, size_t n);

}  // namespace rudra::kernels
