// Shared by the fuzz targets: each defines LLVMFuzzerTestOneInput, run by libFuzzer (the
// "fuzz" preset, clang) or by fuzz_replay.cpp over a saved corpus (every build, in ctest).
// An input may be rejected, but only with an exception whose message names the input's file:
// anything else (a crash, a sanitizer report, an error that does not say where) is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace rudra::fuzz {

// The name the targets give their input in error messages.
inline const std::string kInputName = "fuzz-input";

// Ends the process (a finding) when `what` does not name the input.
inline void require_named(const std::exception& e) {
    const std::string what = e.what();
    if (what.find(kInputName) != std::string::npos) return;
    std::fprintf(stderr, "fuzz: the error does not name the file: %s\n", what.c_str());
    std::abort();
}

// Ends the process (a finding) when an accepted input breaks an invariant.
inline void require(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
    std::abort();
}

// The input after its first byte; when that byte is odd, with the CRC-32 of all but its last 4
// bytes written into them, so that a snapshot's fields behind the checksum are reached (a random
// file almost never carries a valid one).
std::string with_fixed_crc(const uint8_t* data, size_t size);

}  // namespace rudra::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
