// The portable BF16 micro-kernel and conversions: the same arithmetic as the vector ones (each
// pair's two exact products added, then added to the FP32 accumulator), for CPUs without BF16
// dot products and as the reference the others are tested against.
#include "kernels/bf16/bf16.h"
#include "kernels/bf16/bgemm.h"

namespace rudra::kernels {
namespace {

constexpr int kMR = 4, kNR = 16;

float low_of(uint32_t w) { return from_bf16(static_cast<bf16>(w & 0xffffu)); }
float high_of(uint32_t w) { return from_bf16(static_cast<bf16>(w >> 16)); }

void run(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t rs_c, float alpha, float beta) {
    float acc[kMR][kNR] = {};
    for (int64_t q = 0; q < kp; ++q, a += kMR, b += kNR)
        for (int i = 0; i < kMR; ++i) {
            const float a0 = low_of(a[i]), a1 = high_of(a[i]);
            for (int j = 0; j < kNR; ++j) acc[i][j] += a0 * low_of(b[j]) + a1 * high_of(b[j]);
        }
    for (int i = 0; i < kMR; ++i, c += rs_c)
        for (int j = 0; j < kNR; ++j) c[j] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * c[j]);
}

void to_bf16_array(const float* x, bf16* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = to_bf16(x[i]);
}

void from_bf16_array(const bf16* x, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = from_bf16(x[i]);
}

constexpr Bf16MicroKernel kKernel{
    "reference", Isa::Reference, kMR, kNR, 128, 256, 4096, run, nullptr, pair_rows_portable, to_bf16_array,
    pair_runs_portable, round_runs_portable, nullptr};
constexpr Bf16Convert kConvert{"portable", to_bf16_array, from_bf16_array};

}  // namespace

const Bf16MicroKernel* reference_bf16_micro_kernel() { return &kKernel; }

void pair_rows_portable(const float* r0, const float* r1, int count, int width, uint32_t* dst) {
    for (int l = 0; l < count; ++l)
        dst[l] = static_cast<uint32_t>(to_bf16(r0[l])) | (r1 ? static_cast<uint32_t>(to_bf16(r1[l])) << 16 : 0u);
    for (int l = count; l < width; ++l) dst[l] = 0;
}

void pair_runs_portable(const float* r0, const float* r1, int64_t run_stride, int runs, int run_len, int width,
                        int64_t sliver_words, uint32_t* dst) {
    int64_t p = 0;
    for (int y = 0; y < runs; ++y)
        for (int x = 0; x < run_len; ++x, ++p) {
            const int64_t at = y * run_stride + x;
            dst[p / width * sliver_words + p % width] =
                static_cast<uint32_t>(to_bf16(r0[at])) | (r1 ? static_cast<uint32_t>(to_bf16(r1[at])) << 16 : 0u);
        }
    for (; p % width; ++p) dst[p / width * sliver_words + p % width] = 0;
}

void round_runs_portable(const float* src, int64_t run_stride, int runs, int run_len, uint16_t* out) {
    for (int y = 0; y < runs; ++y, src += run_stride, out += run_len)
        for (int x = 0; x < run_len; ++x) out[x] = to_bf16(src[x]);
}

void round_row_portable(const float* x, uint16_t* out, size_t n) { to_bf16_array(x, out, n); }
const Bf16Convert* portable_bf16_convert() { return &kConvert; }

}  // namespace rudra::kernels
