// The machine's FP32 peak as the benchmarks measure it: every thread runs independent FMA
// chains on the widest vectors the CPU has, long enough to hide their latency.
#pragma once

namespace rudra::kernels {

struct PeakResult {
    double gflops;     // all threads together
    const char* isa;   // the vectors used: "avx512", "avx2", "vsx" or "scalar"
};

// Runs for about `seconds` on `threads` OpenMP threads.
PeakResult measure_peak(int threads, double seconds = 0.3);

}  // namespace rudra::kernels
