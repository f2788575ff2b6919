// Portable micro-kernel: plain C++ the compiler may vectorise for whatever target it builds for.
#include "kernels/sgemm/micro_kernel.h"

namespace rudra::kernels {
namespace {

constexpr int kMR = 4, kNR = 16;

void run(int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c, float alpha,
         float beta) {
    float acc[kMR][kNR] = {};
    for (int64_t p = 0; p < k; ++p, a += kMR, b += rs_b)
        for (int i = 0; i < kMR; ++i)
            for (int j = 0; j < kNR; ++j) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < kMR; ++i, c += rs_c)
        for (int j = 0; j < kNR; ++j) c[j] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * c[j]);
}

constexpr MicroKernel kKernel{"reference", Isa::Reference, kMR, kNR, 128, 256, 4096, run, nullptr, nullptr, nullptr};

}  // namespace

const MicroKernel* reference_micro_kernel() { return &kKernel; }

}  // namespace rudra::kernels
