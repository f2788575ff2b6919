// The machine's FP32 peak as the benchmarks measure it: every thread runs independent FMA
// chains on the widest vectors the CPU has, long enough to hide their latency.
#pragma once
#include "kernels/isa.h"

namespace rudra::kernels {

struct PeakResult {
    double gflops;     // all threads together
    const char* isa;   // the vectors used: "avx512", "avx2", "vsx" or "scalar"
};

// Runs for about `seconds` on `threads` OpenMP threads, on the widest vectors the gate allows.
PeakResult measure_peak(int threads, double seconds = 0.3, const IsaGate& gate = isa_gate());

// The BF16 peak, counted as FP32 FLOPs (2 per multiply-add): BF16 dot products (VDPBF16PS, two
// multiply-adds per lane) where the gate allows avx512_bf16; {0, "none"} elsewhere.
PeakResult measure_bf16_peak(int threads, double seconds = 0.3, const IsaGate& gate = isa_gate());

}  // namespace rudra::kernels
