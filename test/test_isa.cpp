// The ISA gate: which levels a CPU's features allow (with CPUs made up for the purpose, such as
// one with AVX-512F but not DQ), the cap and its errors, and that a cap reaches every operation
// with ISA-specific implementations: the chosen implementation's name per operation at each
// level this CPU has.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "kernels/bf16/bgemm.h"
#include "kernels/conv.h"
#include "kernels/lrn.h"
#include "kernels/peak.h"
#include "kernels/pooling.h"
#include "kernels/relu.h"
#include "kernels/sgemm/sgemm.h"
#include "kernels/transpose.h"
#include "kernels/problems.h"

using namespace rudra::kernels;

namespace {

std::string error_of(const CpuFeatures& cpu, const std::string& cap) {
    try {
        IsaGate gate(cpu, cap);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

#if defined(__x86_64__)
CpuFeatures avx2_cpu() {
    CpuFeatures f;
    f.avx2 = f.fma = true;
    return f;
}
CpuFeatures avx512_cpu() {
    CpuFeatures f = avx2_cpu();
    f.avx512f = f.avx512dq = f.avx512bw = f.avx512vl = true;
    return f;
}
CpuFeatures bf16_cpu() {
    CpuFeatures f = avx512_cpu();
    f.avx512bf16 = true;
    return f;
}
#endif

// What each operation runs at a level, on this architecture.
struct Expected {
    const char* micro_kernel;
    const char* transpose;
    const char* pool_narrow;  // forward of a 32-wide max pooling
    const char* pool_wide;    // forward of a 64-wide max pooling
    const char* pool_avg_backward;
    const char* lrn;
    const char* portable;      // the portable loops compiled for the level (ReLU, max pooling's backward)
    const char* conv_forward;  // the own convolution's forward pass, stride 1
    const char* peak;
};

Expected expected_at(Isa level) {
    switch (level) {
        case Isa::Avx512Bf16:  // its FP32 operations are avx512's
        case Isa::Avx512:
            return {"avx512",        "avx512_16x16",    "avx512_narrow",       "avx512_rows", "avx512_narrow",
                    "avx512_narrow", "portable_avx512", "fwd implicit_avx512", "avx512"};
        case Isa::Avx2:
            return {"avx2",          "avx2_8x8",      "avx2_rows",         "avx2_rows",     "portable_avx2",
                    "portable_avx2", "portable_avx2", "fwd implicit_avx2", "avx2"};
        case Isa::Mma:
            return {"mma",      "portable", "portable",         "portable", "portable",
                    "portable", "portable", "fwd implicit_mma", "vsx"};
        case Isa::Vsx:
            return {"vsx",      "portable", "portable",         "portable", "portable",
                    "portable", "portable", "fwd implicit_vsx", "vsx"};
        case Isa::Reference: break;
    }
    return {"reference", "portable", "portable", "portable",
            "portable",  "portable", "portable", "fwd im2col+sgemm_reference",
            "scalar"};
}

PoolGeometry square_pool(int size, int kernel, int stride) {
    PoolGeometry g;
    g.height = g.width = size;
    g.kernel_h = g.kernel_w = kernel;
    g.stride_h = g.stride_w = stride;
    return g;
}

}  // namespace

#if defined(__x86_64__)
TEST_CASE("x86-64 levels follow the features: AVX-512 needs F, DQ, BW and VL, AVX2 needs FMA too") {
    CHECK(IsaGate(CpuFeatures{}).top() == Isa::Reference);
    CHECK(IsaGate(avx2_cpu()).top() == Isa::Avx2);
    CHECK(IsaGate(avx512_cpu()).top() == Isa::Avx512);

    CpuFeatures no_fma = avx2_cpu();
    no_fma.fma = false;
    CHECK(IsaGate(no_fma).top() == Isa::Reference);

    // A CPU with AVX-512F but not DQ (Knights Landing): the AVX-512 code uses DQ, so it runs AVX2.
    CpuFeatures f_only = avx2_cpu();
    f_only.avx512f = true;
    const IsaGate knl(f_only);
    CHECK(knl.top() == Isa::Avx2);
    CHECK(!knl.allows(Isa::Avx512));
    CHECK(contains(knl.refusal(Isa::Avx512), "which this CPU lacks"));
    CHECK(contains(error_of(f_only, "avx512"), "this CPU lacks AVX-512 F, DQ, BW and VL (it runs: avx2, reference)"));

    const IsaGate gate(avx512_cpu());
    CHECK(gate.allows(Isa::Avx512));
    CHECK(gate.allows(Isa::Avx2));
    CHECK(gate.allows(Isa::Reference));
    CHECK(!gate.allows(Isa::Vsx));
    CHECK(!gate.allows(Isa::Mma));
    CHECK(contains(gate.refusal(Isa::Vsx), "not an instruction-set level of x86-64"));
    CHECK(!gate.capped());
    CHECK(contains(gate.describe(), "the highest this CPU has"));
}

TEST_CASE("avx512_bf16 needs AVX512-BF16 on top of the whole avx512 level; its FP32 code is avx512's") {
    CHECK(IsaGate(bf16_cpu()).top() == Isa::Avx512Bf16);
    CpuFeatures no_dq = bf16_cpu();
    no_dq.avx512dq = false;
    CHECK(IsaGate(no_dq).top() == Isa::Avx2);
    CHECK(contains(error_of(avx512_cpu(), "avx512_bf16"), "this CPU lacks AVX-512 F, DQ, BW, VL and BF16"));
    const IsaGate capped(bf16_cpu(), "avx512");
    CHECK(capped.capped());
    CHECK(capped.refusal(Isa::Avx512Bf16) == "needs avx512_bf16, above the cap RUDRA_ISA=avx512");
    CHECK(IsaGate(bf16_cpu()).allows(Isa::Avx512));
    CHECK(describe_features(bf16_cpu()) == "avx2 fma avx512f avx512dq avx512bw avx512vl avx512bf16");
    CHECK(error_of(bf16_cpu(), "sse") ==
          "RUDRA_ISA=sse: not an instruction-set level of this x86-64 build (choices: avx512_bf16, avx512, avx2, "
          "reference)");
    CHECK(runnable_bf16_micro_kernels(capped).size() == 1);
}

TEST_CASE(
    "a cap lowers the levels allowed; a cap the CPU lacks or that does not exist is an error naming the choices") {
    const IsaGate capped(avx512_cpu(), "avx2");
    CHECK(capped.top() == Isa::Avx2);
    CHECK(capped.capped());
    CHECK(!capped.allows(Isa::Avx512));
    CHECK(capped.allows(Isa::Reference));
    CHECK(capped.refusal(Isa::Avx512) == "needs avx512, above the cap RUDRA_ISA=avx2");
    CHECK(capped.describe() == "avx2 (AVX2 and FMA): capped by RUDRA_ISA=avx2; this CPU has avx512");
    CHECK(IsaGate(avx512_cpu(), "reference").top() == Isa::Reference);
    CHECK(IsaGate(avx512_cpu(), "avx512").top() == Isa::Avx512);

    CHECK(error_of(avx512_cpu(), "sse") ==
          "RUDRA_ISA=sse: not an instruction-set level of this x86-64 build (choices: avx512_bf16, avx512, avx2, "
          "reference)");
    CHECK(contains(error_of(avx512_cpu(), "vsx"), "not an instruction-set level of this x86-64 build"));
    CHECK(contains(error_of(avx2_cpu(), "avx512"), "RUDRA_ISA=avx512: this CPU lacks"));
    CHECK(error_of(avx2_cpu(), "AVX2") != "");  // names are exact
}
#endif

#if defined(__powerpc64__)
TEST_CASE("POWER levels follow the features: MMA needs a POWER10, VSX every ppc64le CPU has") {
    CpuFeatures p9;
    p9.vsx = true;
    CpuFeatures p10 = p9;
    p10.mma = true;
    CHECK(IsaGate(p9).top() == Isa::Vsx);
    CHECK(IsaGate(p10).top() == Isa::Mma);
    CHECK(IsaGate(p10, "vsx").top() == Isa::Vsx);
    CHECK(contains(error_of(p9, "mma"), "this CPU lacks POWER10 MMA"));
    CHECK(contains(error_of(p10, "avx2"), "not an instruction-set level of this ppc64le build"));
}
#endif

TEST_CASE("the cap reaches every operation: each one's implementation at each level this CPU has") {
    const CpuFeatures cpu = isa_gate().cpu();
    const ConvProblem conv = parse_problem("mb2ic8ih16oc16oh16kh5ph2").conv;
    for (Isa level : cpu_levels(cpu)) {
        const IsaGate gate(cpu, isa_name(level));
        const Expected want = expected_at(level);
        CAPTURE(std::string(isa_name(level)));

        CHECK(std::string(choose_micro_kernel(gate).kernel.name) == want.micro_kernel);
        ImplChoice t;
        choose_transpose(gate, &t);
        CHECK(t.name == want.transpose);

        const PoolKernel narrow(PoolMethod::Max, square_pool(32, 3, 2), gate);
        const PoolKernel wide(PoolMethod::Max, square_pool(64, 3, 2), gate);
        const PoolKernel average(PoolMethod::Average, square_pool(16, 3, 2), gate);
        CHECK(narrow.forward_impl().name == want.pool_narrow);
        CHECK(wide.forward_impl().name == want.pool_wide);
        CHECK(narrow.backward_impl().name == want.portable);  // max pooling's backward is a scatter
        CHECK(average.backward_impl().name == want.pool_avg_backward);

        LrnGeometry lrn;
        lrn.channels = 4;
        lrn.height = lrn.width = 16;
        lrn.local_size = 3;
        lrn.across_channels = false;
        CHECK(LrnKernel(lrn, 2, gate).impl().name == want.lrn);
        CHECK(ReluKernel(0.0f, gate).impl().name == want.portable);

        const auto own = make_conv_kernel(conv, ConvBackend::Own, 1, gate);
        CAPTURE(own->describe());
        CHECK(own->describe().rfind(want.conv_forward, 0) == 0);

        CHECK(std::string(measure_peak(1, 0.01, gate).isa) == want.peak);
        // BF16: its own micro-kernel and peak at avx512_bf16 only; below it the reference kernel.
        const bool bf16 = level == Isa::Avx512Bf16;
        const char* bf16_kernel = bf16 ? "avx512_bf16" : level == Isa::Mma && mma_bf16_micro_kernel() ? "mma" : "reference";
        CHECK(std::string(runnable_bf16_micro_kernels(gate).front()->name) == bf16_kernel);
        CHECK(std::string(measure_bf16_peak(1, 0.01, gate).isa) == (bf16 ? "avx512_bf16" : "none"));

        // Each choice says why the faster implementations were passed over: above the cap, or
        // not on this CPU.
#if defined(__x86_64__)
        if (!gate.allows(Isa::Avx512)) {
            CHECK(contains(narrow.forward_impl().why,
                           "avx512_narrow, avx512_rows, portable_avx512: " + gate.refusal(Isa::Avx512)));
            if (!gate.allows(Isa::Avx2))
                CHECK(contains(narrow.forward_impl().why, "avx2_rows, portable_avx2: " + gate.refusal(Isa::Avx2)));
            CHECK(contains(narrow.describe(), cpu_has(cpu, Isa::Avx512)
                                                  ? "above the cap RUDRA_ISA=" + std::string(isa_name(level))
                                                  : std::string("which this CPU lacks")));
        }
#endif
    }
}

TEST_CASE("shapes an implementation does not take fall through to the next, saying why") {
    const IsaGate& gate = isa_gate();
    PoolGeometry stride3 = square_pool(20, 3, 3);
    const PoolKernel k(PoolMethod::Average, stride3, gate);
    CHECK(k.forward_impl().name.rfind("portable", 0) == 0);
    if (gate.allows(Isa::Avx512)) CHECK(contains(k.forward_impl().why, "column stride 3, not 1 or 2"));

    LrnGeometry across;
    across.channels = 8;
    across.height = across.width = 8;
    CHECK(LrnKernel(across, 1, gate).impl().name.rfind("portable", 0) == 0);
    if (gate.allows(Isa::Avx512)) CHECK(contains(LrnKernel(across, 1, gate).describe(), "across channels"));

    // A stride-4 convolution is not implicit on any micro-kernel, and 5 output channels leave the
    // gather tile's slivers mostly empty: the implementation list says why each was passed over.
    const ConvProblem strided = parse_problem("mb1ic3ih23oc5kh11sh4ph1").conv;
    const auto own = make_conv_kernel(strided, ConvBackend::Own, 1, gate);
    CHECK(contains(own->describe(), "fwd im2col+sgemm_"));
    if (choose_micro_kernel(gate).kernel.indirect) CHECK(contains(own->describe(), "(implicit: stride 4x4"));
    if (choose_micro_kernel(gate).kernel.gather_a) CHECK(contains(own->describe(), "gather: 5 channels fill under 85%"));
}

#ifdef RUDRA_HAVE_DNNL
TEST_CASE("oneDNN follows the process's cap (RUDRA_ISA)") {
    const ConvProblem p = parse_problem("mb2ic8ih16oc16oh16kh3ph1").conv;
    const std::string impl = make_conv_kernel(p, ConvBackend::Onednn, 1)->describe();
    CAPTURE(impl);
    if (!isa_gate().allows(Isa::Avx512)) CHECK(!contains(impl, "avx512"));
    if (!isa_gate().allows(Isa::Avx2)) CHECK(!contains(impl, "avx2"));
}
#endif
