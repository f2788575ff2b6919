// The own packed SGEMM against the triple-loop reference: every micro-kernel this CPU can run,
// edge tiles (m < mr, n < nr, k = 1), odd leading dimensions, transposes, alpha/beta cases,
// blocks crossing mc/kc/nc, and threads.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "kernels/gemm.h"
#include "kernels/sgemm/sgemm.h"

using namespace rudra::kernels;

namespace {

struct Case {
    Trans ta, tb;
    int m, n, k;
    float alpha, beta;
    int pad;  // extra columns in every leading dimension
};

// Returns the largest |own - reference| relative to the size of the terms.
double compare(const MicroKernel& uk, const Case& cs, int threads, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int a_rows = cs.ta == Trans::No ? cs.m : cs.k, a_cols = cs.ta == Trans::No ? cs.k : cs.m;
    const int b_rows = cs.tb == Trans::No ? cs.k : cs.n, b_cols = cs.tb == Trans::No ? cs.n : cs.k;
    const int lda = a_cols + cs.pad, ldb = b_cols + cs.pad, ldc = cs.n + cs.pad;
    std::vector<float> a(static_cast<size_t>(a_rows) * lda), b(static_cast<size_t>(b_rows) * ldb),
        c(static_cast<size_t>(cs.m) * ldc);
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
    for (float& v : c) v = u(rng);
    std::vector<float> ref = c, got = c;
    if (cs.beta == 0.0f)  // beta 0 must ignore C, NaN included
        for (size_t i = 0; i < got.size(); ++i) got[i] = std::nanf("");
    sgemm_reference(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, ref.data(),
                    ldc);
    sgemm_packed(uk, cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, got.data(),
                 ldc, threads);
    double worst = 0.0;
    for (int i = 0; i < cs.m; ++i)
        for (int j = 0; j < ldc; ++j) {
            const size_t at = static_cast<size_t>(i) * ldc + j;
            if (j >= cs.n) {  // padding must be untouched
                if (!(got[at] == c[at] || (std::isnan(got[at]) && cs.beta == 0.0f))) return 1e30;
                continue;
            }
            const double scale = std::abs(cs.alpha) * cs.k + std::abs(cs.beta) + 1.0;
            const double d = std::abs(static_cast<double>(got[at]) - ref[at]) / scale;
            if (!(d <= worst)) worst = std::isnan(d) ? 1e30 : d;
        }
    return worst;
}

std::string describe(const MicroKernel& uk, const Case& cs, int threads) {
    return std::string(uk.name) + " m" + std::to_string(cs.m) + " n" + std::to_string(cs.n) + " k" +
           std::to_string(cs.k) + (cs.ta == Trans::Yes ? " A^T" : "") + (cs.tb == Trans::Yes ? " B^T" : "") +
           " alpha " + std::to_string(cs.alpha) + " beta " + std::to_string(cs.beta) + " pad " +
           std::to_string(cs.pad) + " threads " + std::to_string(threads);
}

}  // namespace

TEST_CASE("every runnable micro-kernel matches the reference on edge tiles and odd strides") {
    const auto kernels = runnable_micro_kernels();
    REQUIRE(!kernels.empty());
    CHECK(std::string(kernels.back()->name) == "reference");
    uint32_t seed = 1;
    for (const MicroKernel* uk : kernels) {
        const int MR = uk->mr, NR = uk->nr;
        const int ms[] = {1, MR - 1, MR, MR + 1, 2 * MR + 3};
        const int ns[] = {1, NR - 1, NR, NR + 5, 3 * NR};
        const int ks[] = {1, 2, 7, 33};
        for (int m : ms)
            for (int n : ns)
                for (int k : ks)
                    for (Trans ta : {Trans::No, Trans::Yes})
                        for (Trans tb : {Trans::No, Trans::Yes}) {
                            const Case cs{ta, tb, m, n, k, 1.0f, 0.0f, (m + n + k) % 3};
                            CAPTURE(describe(*uk, cs, 1));
                            CHECK(compare(*uk, cs, 1, seed++) < 1e-6);
                        }
        const float alphas[] = {1.0f, -0.5f, 2.0f}, betas[] = {0.0f, 1.0f, 0.25f};
        for (float alpha : alphas)
            for (float beta : betas) {
                const Case cs{Trans::No, Trans::No, MR + 2, NR + 3, 5, alpha, beta, 1};
                CAPTURE(describe(*uk, cs, 1));
                CHECK(compare(*uk, cs, 1, seed++) < 1e-6);
            }
    }
}

TEST_CASE("blocks crossing mc, kc and nc, alone and with threads") {
    for (const MicroKernel* uk : runnable_micro_kernels()) {
        // The same loops with tiny cache blocks: every block edge is crossed several times at a
        // size the emulated POWER runs in CI can afford.
        MicroKernel small = *uk;
        small.mc = 2 * uk->mr;
        small.kc = 16;
        small.nc = 2 * uk->nr;
        const Case crossing[] = {
            {Trans::No, Trans::No, 5 * uk->mr + 3, 5 * uk->nr + 7, 53, 1.0f, 0.5f, 1},
            {Trans::Yes, Trans::No, 4 * uk->mr + 1, 97, 40, -1.0f, 0.0f, 3},
            {Trans::No, Trans::Yes, 75, 3 * uk->nr + 1, 33, 1.0f, 1.0f, 0},
            {Trans::Yes, Trans::Yes, 2 * uk->mr, 2 * uk->nr, 16, 2.0f, 0.0f, 2},
        };
        // Shapes of cifar10_full's convolutions with the kernel's real blocks.
        const Case conv_shapes[] = {
            {Trans::No, Trans::No, 32, 1024, 75, 1.0f, 0.0f, 0},   // forward, B read in place
            {Trans::Yes, Trans::No, 800, 64, 64, 1.0f, 0.0f, 0},   // backward data
            {Trans::No, Trans::Yes, 32, 800, 256, 1.0f, 1.0f, 0},  // backward weights, accumulating
            // Threads split C by rows: a packed B of over 256 KiB shared (this one), and one small
            // enough for each thread to pack its own (backward data above).
            {Trans::No, Trans::Yes, 288, 272, 256, 1.0f, 0.5f, 0},
            // B's rows 16 KiB apart over more than 256 steps: packed, not read in place.
            {Trans::No, Trans::No, 16, 40, 300, 1.0f, 1.0f, 4056},
        };
        uint32_t seed = 100;
        for (int threads : {1, 2, 3}) {
            for (const Case& cs : crossing) {
                CAPTURE(describe(small, cs, threads) + " (small blocks)");
                CHECK(compare(small, cs, threads, seed++) < 1e-6);
            }
            for (const Case& cs : conv_shapes) {
                CAPTURE(describe(*uk, cs, threads));
                CHECK(compare(*uk, cs, threads, seed++) < 1e-6);
            }
        }
    }
}

TEST_CASE("small products with few rows, computed as C^T and transposed into C, match the reference") {
    // m32 n75 is the weight gradient of cifar10_full's conv1 per image: its transpose fills the
    // register tiles better, so the loops compute C^T = op(B)^T op(A)^T into a scratch.
    uint32_t seed = 300;
    for (const MicroKernel* uk : runnable_micro_kernels())
        for (Trans ta : {Trans::No, Trans::Yes})
            for (Trans tb : {Trans::No, Trans::Yes})
                for (int threads : {1, 2}) {
                    const Case cases[] = {
                        {ta, tb, 32, 75, 1024, 1.0f, 0.0f, 0},
                        {ta, tb, 32, 75, 256, 1.0f, 0.5f, 2},
                        {ta, tb, 20, 36, 64, -0.5f, 1.0f, 3},
                        {ta, tb, 20, 36, 65, 1.5f, 0.25f, 0},
                        {ta, tb, 2 * uk->mr - 1, 3 * uk->nr - 5, 100, 2.0f, 0.25f, 1},
                    };
                    for (const Case& cs : cases) {
                        CAPTURE(describe(*uk, cs, threads));
                        CHECK(compare(*uk, cs, threads, seed++) < 1e-6);
                    }
                }
}

TEST_CASE("k = 0 and alpha = 0 scale C by beta") {
    const MicroKernel& uk = *runnable_micro_kernels().front();
    std::vector<float> c = {1, 2, 3, 4};
    sgemm_packed(uk, Trans::No, Trans::No, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2, 1);
    CHECK(c == std::vector<float>{0.5f, 1, 1.5f, 2});
    float a[2] = {1, 1}, b[2] = {1, 1};
    sgemm_packed(uk, Trans::No, Trans::No, 2, 2, 1, 0.0f, a, 1, b, 2, 0.0f, c.data(), 2, 1);
    CHECK(c == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("the micro-kernel is the fastest the gate allows, with the reasons for those passed over") {
    const IsaGate& process = isa_gate();
    for (Isa level : cpu_levels(process.cpu())) {
        const KernelChoice choice = choose_micro_kernel(IsaGate(process.cpu(), isa_name(level)));
        CAPTURE(isa_name(level));
        CHECK(choice.kernel.isa == fp32_level(level));  // every FP32 level has a micro-kernel of its own
        if (fp32_level(level) != fp32_level(cpu_levels(process.cpu()).front()))  // a faster kernel passed over
            CHECK(choice.reason.find("above the cap RUDRA_ISA=" + std::string(isa_name(level))) != std::string::npos);
    }
    CHECK(selected_micro_kernel().kernel.isa == fp32_level(process.top()));
}

TEST_CASE("the gate picks the level the (emulated) CPU or RUDRA_ISA calls for (RUDRA_EXPECT_ISA)") {
    // tools/power-ci.sh and the qemu runs of tools/run-tests.sh set it: vsx under -cpu power9,
    // mma under -cpu power10, avx2 under -cpu EPYC-Rome; ctest's capped runs expect their cap.
    const char* want = std::getenv("RUDRA_EXPECT_ISA");
    const std::string chosen = isa_name(isa_gate().top());
    if (want) CHECK(chosen == want);
    CHECK(selected_micro_kernel().kernel.isa == fp32_level(isa_gate().top()));
    MESSAGE("ISA gate: " << isa_gate().describe() << "; CPU features: " << describe_features(isa_gate().cpu()));
}

TEST_CASE("B given as packed slivers (the fused im2col of backward-weights) matches the reference") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const MicroKernel* uk : runnable_micro_kernels()) {
        const int NR = uk->nr;
        struct Shape {
            int m, n, k;
        };
        for (Shape s : {Shape{32, 75, 1024}, Shape{5, NR + 3, 7}, Shape{uk->mr + 1, 2 * NR, uk->kc + 5}})
            for (int threads : {1, 2}) {
                std::vector<float> a(static_cast<size_t>(s.m) * s.k), b(static_cast<size_t>(s.k) * s.n),
                    c(static_cast<size_t>(s.m) * s.n);
                for (float& v : a) v = u(rng);
                for (float& v : b) v = u(rng);
                for (float& v : c) v = u(rng);
                const int slivers = (s.n + NR - 1) / NR;
                std::vector<float> packed(static_cast<size_t>(slivers) * s.k * NR, 0.0f);
                for (int p = 0; p < s.k; ++p)
                    for (int j = 0; j < s.n; ++j)
                        packed[static_cast<size_t>(j / NR) * s.k * NR + static_cast<size_t>(p) * NR + j % NR] =
                            b[static_cast<size_t>(p) * s.n + j];
                std::vector<float> ref = c, got = c;
                sgemm_reference(Trans::No, Trans::No, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 1.0f,
                                ref.data(), s.n);
                sgemm_packed_b_slivers(*uk, Trans::No, s.m, s.n, s.k, 1.0f, a.data(), s.k, packed.data(), 1.0f,
                                       got.data(), s.n, threads);
                double worst = 0.0;
                for (size_t i = 0; i < ref.size(); ++i)
                    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - ref[i]) / (s.k + 2.0));
                CAPTURE(uk->name);
                CAPTURE(s.m);
                CAPTURE(s.n);
                CAPTURE(s.k);
                CHECK(worst < 1e-6);
            }
    }
}

TEST_CASE("A packed once (a convolution's weights) matches the reference") {
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const MicroKernel* uk : runnable_micro_kernels()) {
        MicroKernel small = *uk;  // tiny blocks: several pc and ic blocks
        small.mc = 2 * uk->mr;
        small.kc = 16;
        small.nc = 2 * uk->nr;
        for (const MicroKernel* k : {uk, static_cast<const MicroKernel*>(&small)})
            for (Trans ta : {Trans::No, Trans::Yes})
                for (Trans tb : {Trans::No, Trans::Yes})
                    for (int threads : {1, 2}) {
                        const int m = 5 * uk->mr + 3, n = 3 * uk->nr + 5, kk = 53;
                        const int lda = ta == Trans::No ? kk + 1 : m + 2, ldb = tb == Trans::No ? n + 3 : kk;
                        std::vector<float> a(static_cast<size_t>(ta == Trans::No ? m : kk) * lda),
                            b(static_cast<size_t>(tb == Trans::No ? kk : n) * ldb), c(static_cast<size_t>(m) * n);
                        for (float& v : a) v = u(rng);
                        for (float& v : b) v = u(rng);
                        for (float& v : c) v = u(rng);
                        std::vector<float> packed(packed_a_floats(*k, m, kk));
                        pack_a_matrix(*k, ta, m, kk, a.data(), lda, packed.data());
                        std::vector<float> ref = c, got = c;
                        sgemm_reference(ta, tb, m, n, kk, 0.5f, a.data(), lda, b.data(), ldb, 1.0f, ref.data(), n);
                        sgemm_prepacked_a(*k, m, n, kk, 0.5f, packed.data(), tb, b.data(), ldb, 1.0f, got.data(), n,
                                          threads);
                        double worst = 0.0;
                        for (size_t i = 0; i < ref.size(); ++i)
                            worst = std::max(worst, std::abs(static_cast<double>(got[i]) - ref[i]) / (kk + 2.0));
                        CAPTURE(describe(*k, Case{ta, tb, m, n, kk, 0.5f, 1.0f, 0}, threads));
                        CHECK(worst < 1e-6);
                    }
    }
}

TEST_CASE("AlignedBuffer: zeroed and 64-byte aligned; from 4 MiB on, on a 2 MiB boundary (a huge page's)") {
    auto zeroed = [](const AlignedBuffer& b) {
        return std::all_of(b.data(), b.data() + b.size(), [](float v) { return v == 0.0f; });
    };
    const std::size_t huge_floats = AlignedBuffer::kHugeFrom / sizeof(float);
    for (std::size_t floats : {std::size_t{1}, std::size_t{1000}, huge_floats - 1, huge_floats, huge_floats + 17}) {
        AlignedBuffer b(floats);
        CAPTURE(floats);
        CHECK(b.size() == floats);
        const auto at = reinterpret_cast<std::uintptr_t>(b.data());
        CHECK(at % AlignedBuffer::kAlignment == 0);
        if (floats >= huge_floats) CHECK(at % AlignedBuffer::kHugePage == 0);
        CHECK(zeroed(b));
        b.data()[floats - 1] = 1.0f;
        b.zero();
        CHECK(zeroed(b));
    }
    CHECK(AlignedBuffer().data() == nullptr);
}
