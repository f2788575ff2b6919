#include "dist/transport/wire.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/bf16/bf16.h"

namespace rudra::dist {

Wire wire_named(const std::string& name) {
    if (name == "fp32") return Wire::Fp32;
    if (name == "bf16") return Wire::Bf16;
    throw std::invalid_argument("--wire '" + name + "': fp32 or bf16");
}

const char* wire_name(Wire wire) { return wire == Wire::Bf16 ? "bf16" : "fp32"; }

size_t wire_bytes(Wire wire, size_t floats) {
    return floats * (wire == Wire::Bf16 ? sizeof(kernels::bf16) : sizeof(float));
}

void wire_encode(Wire wire, const float* src, size_t n, char* dst) {
    if (n == 0) return;
    if (wire == Wire::Fp32) {
        std::memcpy(dst, src, n * sizeof(float));
        return;
    }
    // The destination follows a header of 8-byte fields, so it is 2-byte aligned.
    kernels::to_bf16(src, reinterpret_cast<kernels::bf16*>(dst), n);
}

void wire_round_trip(Wire wire, float* values, size_t n, std::vector<char>& scratch) {
    if (wire == Wire::Fp32 || n == 0) return;
    scratch.resize(wire_bytes(wire, n));
    wire_encode(wire, values, n, scratch.data());
    wire_decode(wire, scratch.data(), n, values);
}

void wire_decode(Wire wire, const char* src, size_t n, float* dst) {
    if (n == 0) return;
    if (wire == Wire::Fp32) {
        std::memcpy(dst, src, n * sizeof(float));
        return;
    }
    kernels::from_bf16(reinterpret_cast<const kernels::bf16*>(src), dst, n);
}

}  // namespace rudra::dist
