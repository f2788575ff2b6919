// BF16: rounding to nearest even (ties, NaN, overflow), the whole-array conversions against the
// scalar one, and the mixed-precision GEMM of every BF16 micro-kernel this CPU can run against
// the product of the rounded inputs computed in double (edge tiles, odd k, transposes, alpha and
// beta, k beyond one block, two threads). A CPU without BF16 dot products tests the reference
// kernel only, and says which kernels it skipped and why.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bf16/bf16.h"
#include "kernels/bf16/bgemm.h"
#include "kernels/conv.h"
#include "kernels/conv_geometry.h"
#include "kernels/problems.h"

using namespace rudra::kernels;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Case {
    Trans ta, tb;
    int m, n, k;
    float alpha, beta;
    int pad;
};

// The largest |bf16 GEMM - double product of the rounded inputs|, relative to sum |a b| of the
// element (plus the beta C term).
double compare(const Bf16MicroKernel& uk, const Case& cs, int threads, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int a_rows = cs.ta == Trans::No ? cs.m : cs.k, a_cols = cs.ta == Trans::No ? cs.k : cs.m;
    const int b_rows = cs.tb == Trans::No ? cs.k : cs.n, b_cols = cs.tb == Trans::No ? cs.n : cs.k;
    const int lda = a_cols + cs.pad, ldb = b_cols + cs.pad, ldc = cs.n + cs.pad;
    std::vector<float> a(static_cast<size_t>(a_rows) * lda), b(static_cast<size_t>(b_rows) * ldb),
        c(static_cast<size_t>(cs.m) * ldc);
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
    for (float& v : c) v = cs.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : u(rng);
    const std::vector<float> c0 = c;
    gemm_bf16_with(uk, cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, c.data(), ldc,
                   threads);
    double worst = 0.0;
    for (int i = 0; i < cs.m; ++i)
        for (int j = 0; j < cs.n; ++j) {
            double sum = 0.0, size = 0.0;
            for (int p = 0; p < cs.k; ++p) {
                const float av = cs.ta == Trans::No ? a[static_cast<size_t>(i) * lda + p] : a[static_cast<size_t>(p) * lda + i];
                const float bv = cs.tb == Trans::No ? b[static_cast<size_t>(p) * ldb + j] : b[static_cast<size_t>(j) * ldb + p];
                const double t = static_cast<double>(round_to_bf16(av)) * round_to_bf16(bv);
                sum += t;
                size += std::fabs(t);
            }
            double want = cs.alpha * sum;
            size = std::fabs(cs.alpha) * size;
            if (cs.beta != 0.0f) {
                want += static_cast<double>(cs.beta) * c0[static_cast<size_t>(i) * ldc + j];
                size += std::fabs(cs.beta * c0[static_cast<size_t>(i) * ldc + j]);
            }
            const double got = c[static_cast<size_t>(i) * ldc + j];
            if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
            worst = std::max(worst, std::fabs(got - want) / (size + 1e-30));
        }
    return worst;
}

// FP32 accumulation of k terms: a few units of FP32 rounding per term at most.
constexpr double kTolerance = 1e-5;

}  // namespace

TEST_CASE("rounding to BF16 is to nearest, ties to even; NaN stays NaN, overflow goes to infinity") {
    const float ulp = std::ldexp(1.0f, -7);  // BF16's spacing at 1
    CHECK(round_to_bf16(1.0f) == 1.0f);
    CHECK(round_to_bf16(1.0f + ulp / 2) == 1.0f);                    // tie, 1 is even
    CHECK(round_to_bf16(1.0f + ulp + ulp / 2) == 1.0f + 2 * ulp);    // tie, 1 + ulp is odd
    CHECK(round_to_bf16(1.0f + ulp / 2 + ulp / 64) == 1.0f + ulp);   // above the tie
    CHECK(round_to_bf16(-1.0f - ulp / 4) == -1.0f);
    CHECK(to_bf16(1.0f) == 0x3f80);
    CHECK(to_bf16(-2.0f) == 0xc000);
    CHECK(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
    CHECK(std::isnan(from_bf16(to_bf16(std::bit_cast<float>(0x7f800001u)))));  // a NaN whose payload is all below
    CHECK(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));
    CHECK(round_to_bf16(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
    const float big = round_to_bf16(3.0e38f);  // a BF16 value within half its spacing
    CHECK((std::bit_cast<uint32_t>(big) & 0xffffu) == 0u);
    CHECK(std::fabs(big - 3.0e38f) <= std::ldexp(3.0e38f, -9));
}

TEST_CASE("the array conversions of every level this CPU has agree with the scalar rounding") {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-100.0f, 100.0f);
    std::vector<float> x(1000 + 7);
    for (float& v : x) v = u(rng);
    // Ties both ways and values near them.
    const float ulp = std::ldexp(1.0f, -7);
    x[0] = 1.0f + ulp / 2;
    x[1] = 1.0f + ulp + ulp / 2;
    x[2] = -(1.0f + ulp + ulp / 2);
    const IsaGate& process = isa_gate();
    for (const IsaGate& gate : {process, IsaGate(process.cpu(), "reference")}) {
        const Bf16Convert& conv = bf16_convert_for(gate);
        CAPTURE(conv.name);
        std::vector<bf16> h(x.size(), 0xdead);
        conv.to_bf16(x.data(), h.data(), x.size() - 3);  // a tail shorter than a vector
        bool same = true;
        for (size_t i = 0; i + 3 < x.size(); ++i) same = same && h[i] == to_bf16(x[i]);
        CHECK(same);
        CHECK(h[x.size() - 1] == 0xdead);  // nothing past n written
        std::vector<float> back(x.size(), -7.0f);
        conv.from_bf16(h.data(), back.data(), x.size() - 3);
        bool exact = true;
        for (size_t i = 0; i + 3 < x.size(); ++i) exact = exact && back[i] == round_to_bf16(x[i]);
        CHECK(exact);
        CHECK(back[x.size() - 1] == -7.0f);
    }
    if (!process.allows(Isa::Avx512Bf16))
        MESSAGE("avx512_bf16 conversions not tested: " << process.refusal(Isa::Avx512Bf16));
}

TEST_CASE("the BF16 GEMM of every kernel this CPU runs matches the product of the rounded inputs") {
    const std::vector<Case> cases = {
        {Trans::No, Trans::No, 1, 1, 1, 1.0f, 0.0f, 0},        {Trans::No, Trans::No, 12, 32, 64, 1.0f, 0.0f, 0},
        {Trans::No, Trans::No, 37, 45, 67, 1.0f, 0.0f, 3},     {Trans::Yes, Trans::No, 37, 45, 67, 0.5f, 1.0f, 1},
        {Trans::No, Trans::Yes, 29, 70, 33, 2.0f, 0.5f, 0},    {Trans::Yes, Trans::Yes, 50, 17, 9, 1.0f, -1.0f, 2},
        {Trans::No, Trans::No, 64, 96, 1300, 1.0f, 0.0f, 0},   {Trans::Yes, Trans::Yes, 40, 40, 1301, 1.0f, 1.0f, 0},
        {Trans::No, Trans::No, 300, 5000, 16, 1.0f, 0.0f, 0},  {Trans::No, Trans::Yes, 250, 64, 700, 1.0f, 0.0f, 5},
    };
    const IsaGate& process = isa_gate();
    const auto kernels = runnable_bf16_micro_kernels(process);
    REQUIRE(!kernels.empty());
    CHECK(std::string(kernels.back()->name) == "reference");
    for (const Bf16MicroKernel* uk : kernels)
        for (int threads : {1, 2})
            for (size_t i = 0; i < cases.size(); ++i) {
                const Case& cs = cases[i];
                CAPTURE(uk->name);
                CAPTURE(threads);
                CAPTURE(cs.m);
                CAPTURE(cs.n);
                CAPTURE(cs.k);
                CHECK(compare(*uk, cs, threads, static_cast<uint32_t>(7 + i)) < kTolerance);
            }
    if (!process.allows(Isa::Avx512Bf16))
        MESSAGE("avx512_bf16 kernel not tested: " << process.refusal(Isa::Avx512Bf16));
}

TEST_CASE("the inputs are rounded to BF16: a product the rounding changes comes out rounded") {
    // 1 + 2^-9 is below half of BF16's spacing at 1: it rounds to 1, so each product is 1 and a
    // row of k of them sums to exactly k. In FP32 it would be k (1 + 2^-9).
    const int m = 13, n = 33, k = 70;
    const float x = 1.0f + std::ldexp(1.0f, -9);
    std::vector<float> a(static_cast<size_t>(m) * k, x), b(static_cast<size_t>(k) * n, x), c(static_cast<size_t>(m) * n);
    for (const Bf16MicroKernel* uk : runnable_bf16_micro_kernels()) {
        CAPTURE(uk->name);
        gemm_bf16_with(*uk, Trans::No, Trans::No, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n, 1);
        bool all_k = true;
        for (float v : c) all_k = all_k && v == static_cast<float>(k);
        CHECK(all_k);
    }
}

TEST_CASE("the kernel choice follows the gate: without BF16 dot products the reference kernel runs, saying why") {
    const IsaGate& process = isa_gate();
    const auto capped = runnable_bf16_micro_kernels(IsaGate(process.cpu(), "reference"));
    REQUIRE(capped.size() == 1);
    CHECK(std::string(capped.front()->name) == "reference");
    const std::string choice = bf16_micro_kernel_choice();
    if (process.allows(Isa::Avx512Bf16)) {
        CHECK(choice == "avx512_bf16");
        CHECK(std::string(selected_bf16_micro_kernel().name) == "avx512_bf16");
    } else {
        // POWER10 (mma) or the reference kernel: the first the gate allows.
        CHECK(std::string(selected_bf16_micro_kernel().name) == runnable_bf16_micro_kernels(process).front()->name);
        CHECK(std::string(selected_bf16_micro_kernel().name) ==
              (process.allows(Isa::Mma) && mma_bf16_micro_kernel() ? "mma" : "reference"));
#if defined(__x86_64__)
        CHECK(contains(choice, "avx512_bf16: needs avx512_bf16"));
#endif
    }
    CHECK(!has_bf16_dot(Isa::Avx512));
    CHECK(has_bf16_dot(Isa::Avx512Bf16));
    CHECK(fp32_level(Isa::Avx512Bf16) == Isa::Avx512);
    CHECK(fp32_level(Isa::Avx2) == Isa::Avx2);
}

namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

std::vector<float> rounded(std::vector<float> v) {
    for (float& x : v) x = round_to_bf16(x);
    return v;
}

// max |got - want| / max(1, max |want|): the sums have at most a few hundred terms of size 1.
double worst_error(const std::vector<float>& got, const std::vector<float>& want) {
    double top = 1.0, worst = 0.0;
    for (float w : want) top = std::max(top, static_cast<double>(std::fabs(w)));
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
    return worst / top;
}

}  // namespace

TEST_CASE("the own_bf16 convolution equals the direct loops on the BF16-rounded inputs, every pass") {
    for (const char* text : {"mb2ic3ih13oc8oh13kh3ph1", "mb3ic6ih11oc8kh5sh2ph2g2", "mb2ic4ih9oc5kh1",
                             "mb2ic32ih12oc4kh3ph1g2", "mb2ic16ih14oc7kh5", "mb2ic16ih9oc8kh3ph1"}) {
        const std::string name = text;
        CAPTURE(name);
        const ConvProblem p = parse_problem(text).conv;
        const ConvGeometry& g = p.geom;
        const size_t xs = static_cast<size_t>(p.num) * g.channels * g.height * g.width;
        const size_t ys = static_cast<size_t>(p.num) * p.out_channels * g.out_h() * g.out_w();
        const size_t ws = static_cast<size_t>(p.out_channels) * (g.channels / p.groups) * g.kernel_h * g.kernel_w;
        const std::vector<float> x = random_values(xs, 1), w = random_values(ws, 2), dy = random_values(ys, 3),
                                 bias = random_values(static_cast<size_t>(p.out_channels), 4);
        const auto kernel = make_conv_kernel(p, ConvBackend::OwnBf16, 2);
        CHECK(contains(kernel->describe(), "own_bf16"));
        // Stride 1 (not 1x1), 16 channels a group or more, 12 wide or more: backward-data is the
        // forward convolution of dy with the weights rotated.
        const bool rotated = g.stride_h == 1 && !g.is_pointwise() && g.channels / p.groups >= 16 && g.width >= 12;
        CHECK(contains(kernel->describe(), "rotated_im2col") == rotated);

        std::vector<float> y(ys), y_ref(ys);
        kernel->forward(x.data(), w.data(), bias.data(), y.data());
        conv_forward_reference(p, rounded(x).data(), rounded(w).data(), bias.data(), y_ref.data());
        CHECK(worst_error(y, y_ref) < 1e-5);

        std::vector<float> dx(xs), dx_ref(xs);
        kernel->backward_data(dy.data(), w.data(), dx.data());
        conv_backward_data_reference(p, rounded(dy).data(), rounded(w).data(), dx_ref.data());
        CHECK(worst_error(dx, dx_ref) < 1e-5);

        std::vector<float> dw(ws, 0.5f), dw_ref(ws, 0.5f), db(p.out_channels, 0.25f), db_ref(p.out_channels, 0.25f);
        kernel->backward_weights(x.data(), dy.data(), dw.data(), db.data());
        conv_backward_weights_reference(p, rounded(x).data(), rounded(dy).data(), dw_ref.data(), nullptr);
        conv_backward_weights_reference(p, x.data(), dy.data(), std::vector<float>(ws).data(), db_ref.data());
        CHECK(worst_error(dw, dw_ref) < 1e-5);
        CHECK(worst_error(db, db_ref) < 1e-5);  // the bias gradient is a plain FP32 sum

        // Unrounded, the passes differ from FP32 by the rounding: far more than the tolerance.
        conv_forward_reference(p, x.data(), w.data(), bias.data(), y_ref.data());
        CHECK(worst_error(y, y_ref) > 1e-4);
    }
}

TEST_CASE("im2col into BF16 slivers, both layouts: every word the plain im2col's rounded pair, past the edges zero") {
    ConvGeometry strided_dilated{2, 7, 10, 3, 3, 1, 2, 1, 3, 2, 2};
    strided_dilated.pad_bottom = 0;  // asymmetric: the last input row is not read
    const ConvGeometry shapes[] = {{3, 13, 13, 3, 3, 1, 1}, {5, 11, 9, 5, 5, 2, 2, 2, 2}, strided_dilated,
                                   {1, 4, 4, 1, 1}};
    for (const Bf16MicroKernel* uk : runnable_bf16_micro_kernels())
        for (const ConvGeometry& g : shapes) {
            CAPTURE(uk->name);
            CAPTURE(g.channels);
            const int K = g.col_rows(), P = g.col_cols(), width = uk->nr;
            const std::vector<float> img = random_values(static_cast<size_t>(g.channels) * g.height * g.width, 21);
            std::vector<float> col(static_cast<size_t>(K) * P), scratch(im2col_scratch_floats(g, 0));
            im2col(img.data(), g, col.data(), scratch.data());
            // Rows [r0, r1): all of them, and an odd range that starts inside (a group's).
            for (const auto& [r0, r1] : {std::pair{0, K}, std::pair{1, K > 2 ? K - 1 : K}}) {
                const int k2 = (r1 - r0 + 1) / 2, slivers = (P + width - 1) / width;
                std::vector<uint32_t> out(static_cast<size_t>(slivers) * k2 * width, 0xdeadbeefu);
                im2col_bf16_slivers(img.data(), g, r0, r1, width, uk->pair_runs, out.data(), scratch.data());
                int wrong = 0;
                for (int s = 0; s < slivers; ++s)
                    for (int q = 0; q < k2; ++q)
                        for (int l = 0; l < width; ++l) {
                            const int p = s * width + l, r = r0 + 2 * q;
                            uint32_t want = 0;
                            if (p < P)
                                want = to_bf16(col[static_cast<size_t>(r) * P + p]) |
                                       (r + 1 < r1 ? static_cast<uint32_t>(to_bf16(col[static_cast<size_t>(r + 1) * P + p])) << 16 : 0u);
                            wrong += out[(static_cast<size_t>(s) * k2 + q) * width + l] != want;
                        }
                CHECK(wrong == 0);

                // Transposed (backward-weights): slivers of rows, pairs of consecutive pixels.
                const int p2 = (P + 1) / 2, row_slivers = (r1 - r0 + width - 1) / width;
                std::vector<uint32_t> rows_out(static_cast<size_t>(row_slivers) * p2 * width, 0xdeadbeefu);
                std::vector<float> wide_scratch(im2col_scratch_floats(g, width));
                im2col_bf16_row_slivers(img.data(), g, r0, r1, width, uk->round_runs, rows_out.data(),
                                        wide_scratch.data());
                wrong = 0;
                for (int s = 0; s < row_slivers; ++s)
                    for (int q = 0; q < p2; ++q)
                        for (int l = 0; l < width; ++l) {
                            const int r = r0 + s * width + l;
                            uint32_t want = 0;
                            const float* row = r < r1 ? col.data() + static_cast<size_t>(r) * P : nullptr;
                            if (row)
                                want = to_bf16(row[2 * q]) | (2 * q + 1 < P ? static_cast<uint32_t>(to_bf16(row[2 * q + 1])) << 16 : 0u);
                            wrong += rows_out[(static_cast<size_t>(s) * p2 + q) * width + l] != want;
                        }
                CHECK(wrong == 0);
            }
        }
}

TEST_CASE("A packed once gives the same bits as A packed by each product") {
    for (const Bf16MicroKernel* uk : runnable_bf16_micro_kernels())
        for (Trans ta : {Trans::No, Trans::Yes})
            for (int k : {1, 67, 1301, 2600}) {
                CAPTURE(uk->name);
                CAPTURE(k);
                const int m = 37, n = 45, lda = ta == Trans::No ? k : m;
                const std::vector<float> a = random_values(static_cast<size_t>(m) * k, 11),
                                         b = random_values(static_cast<size_t>(k) * n, 12);
                std::vector<float> c1(static_cast<size_t>(m) * n, 1.0f), c2 = c1;
                std::vector<uint32_t> packed(bf16_packed_a_words(*uk, m, k));
                pack_bf16_a(*uk, ta, m, k, a.data(), lda, packed.data());
                gemm_bf16_prepacked_a(*uk, m, n, k, 0.5f, packed.data(), Trans::No, b.data(), n, 1.0f, c1.data(), n, 2);
                gemm_bf16_with(*uk, ta, Trans::No, m, n, k, 0.5f, a.data(), lda, b.data(), n, 1.0f, c2.data(), n, 2);
                CHECK(c1 == c2);
            }
}

#ifdef RUDRA_HAVE_DNNL
TEST_CASE("onednn_bf16 convolutions agree with the direct loops to BF16's precision") {
    const ConvProblem p = parse_problem("mb2ic8ih12oc16oh12kh3ph1").conv;
    const ConvGeometry& g = p.geom;
    const size_t xs = static_cast<size_t>(p.num) * g.channels * g.height * g.width;
    const size_t ys = static_cast<size_t>(p.num) * p.out_channels * g.out_h() * g.out_w();
    const size_t ws = static_cast<size_t>(p.out_channels) * g.channels * g.kernel_h * g.kernel_w;
    const std::vector<float> x = random_values(xs, 5), w = random_values(ws, 6), dy = random_values(ys, 7);
    std::unique_ptr<ConvKernel> kernel;
    try {
        kernel = make_conv_kernel(p, ConvBackend::OnednnBf16, 2);
    } catch (const std::exception& e) {
        MESSAGE("onednn_bf16 not tested: oneDNN has no BF16 convolution here (" << e.what() << ")");
        return;
    }
    std::vector<float> y(ys), y_ref(ys), dx(xs), dx_ref(xs), dw(ws, 0.0f), dw_ref(ws, 0.0f);
    kernel->forward(x.data(), w.data(), nullptr, y.data());
    conv_forward_reference(p, x.data(), w.data(), nullptr, y_ref.data());
    kernel->backward_data(dy.data(), w.data(), dx.data());
    conv_backward_data_reference(p, dy.data(), w.data(), dx_ref.data());
    kernel->backward_weights(x.data(), dy.data(), dw.data(), nullptr);
    conv_backward_weights_reference(p, x.data(), dy.data(), dw_ref.data(), nullptr);
    // Inputs and the BF16 outputs rounded: a few parts in a thousand of the largest value.
    CHECK(worst_error(y, y_ref) < 2e-2);
    CHECK(worst_error(dx, dx_ref) < 2e-2);
    CHECK(worst_error(dw, dw_ref) < 2e-2);
    CHECK(worst_error(y, y_ref) > 0.0);  // and not FP32
}
#endif
