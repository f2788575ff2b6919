// How parameters travel between ranks (--wire): FP32, or BF16, half the bytes, each value
// rounded to nearest even by the sender and widened back to FP32 by the receiver. Only the
// payloads of weights and gradients change; headers stay as they are, and whatever a rank keeps
// (the PS's master weights, its solver state, a learner's model) stays FP32.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace rudra::dist {

enum class Wire { Fp32, Bf16 };

Wire wire_named(const std::string& name);  // "fp32" or "bf16"; anything else throws std::invalid_argument
const char* wire_name(Wire wire);
size_t wire_bytes(Wire wire, size_t floats);
// dst holds wire_bytes(wire, n) bytes.
void wire_encode(Wire wire, const float* src, size_t n, char* dst);
// src holds wire_bytes(wire, n) bytes.
void wire_decode(Wire wire, const char* src, size_t n, float* dst);
// The values as a message in `wire` delivers them: encoded and decoded in place (a replay's
// learners see the weights, and the PS their gradients, as the run's did). `scratch` is grown to
// the message's bytes and may be reused.
void wire_round_trip(Wire wire, float* values, size_t n, std::vector<char>& scratch);

}  // namespace rudra::dist
