// The kernels' one CPU-feature gate. Every operation with ISA-specific implementations (the
// SGEMM micro-kernels and with them the implicit convolution tiles, transpose, pooling, LRN, the
// peak measurement, and oneDNN's own dispatch) asks it which instruction-set levels it may use,
// once, when the operation is set up (kernels/impl_list.h).
//
// Levels: on x86-64 avx512_bf16 > avx512 > avx2 > reference, on POWER mma > vsx > reference.
// avx512_bf16 adds BF16 dot products (VDPBF16PS) to avx512 and has no FP32 code of its own: FP32
// operations run their avx512 implementations there (fp32_level); POWER10's MMA level has BF16
// outer products as well as FP32 ones. Code written for
// a level uses exactly the features isa_features() names for it, and kernels/isa_target.h
// compiles it with those features and no others. "reference" is portable C++ compiled for the
// architecture's baseline (x86-64: SSE2; ppc64le: POWER8), which every CPU of it runs. The CPU
// is asked for features, never for its name: under emulation the names are wrong and the
// feature bits right.
#pragma once
#include <string>
#include <vector>

namespace rudra::kernels {

enum class Isa { Reference, Avx2, Avx512, Avx512Bf16, Vsx, Mma };

const char* isa_name(Isa isa);      // "reference", "avx2", "avx512", "avx512_bf16", "vsx", "mma"
const char* isa_features(Isa isa);  // e.g. "AVX-512 F, DQ, BW and VL"
// This build's architecture's levels, highest first, and their names ("avx512, avx2, reference").
const std::vector<Isa>& isa_levels();
std::string isa_level_names();
// The level whose FP32 implementations run at `isa`: avx512 for avx512_bf16, else itself.
Isa fp32_level(Isa isa);
// Whether code written for the level has BF16 dot products with FP32 accumulation.
bool has_bf16_dot(Isa isa);

// What the CPU reports (and the operating system enables: AVX state saved on context switch).
struct CpuFeatures {
    bool avx2 = false, fma = false;
    bool avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false, avx512bf16 = false;
    bool vsx = false, mma = false;
    bool amd = false;  // the vendor, for cache block sizes only
    // Cache sizes in bytes (one core's L1 data cache and L2, the L3 it shares), as the C library
    // reports them (x86: from CPUID); 0 where unknown. For the SGEMM's cache blocks.
    long l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
};
CpuFeatures detect_cpu_features();
// Whether the CPU has every feature of the level (reference: always).
bool cpu_has(const CpuFeatures& cpu, Isa isa);
std::string describe_features(const CpuFeatures& cpu);  // "avx2 fma avx512f ...", "" when none

// Which levels implementations may use: those the CPU has, up to a cap.
class IsaGate {
public:
    // cap "": no cap, the highest level the CPU has. Otherwise a level name of this architecture
    // that the CPU has; any other throws std::invalid_argument naming the choices. `source` says
    // where the cap came from, for messages ("RUDRA_ISA").
    explicit IsaGate(const CpuFeatures& cpu, const std::string& cap = "", const std::string& source = "RUDRA_ISA");

    bool allows(Isa isa) const;
    Isa top() const { return top_; }  // the highest level allowed
    bool capped() const { return top_ != cpu_top_; }
    const CpuFeatures& cpu() const { return cpu_; }
    // "avx512 (AVX-512 F, DQ, BW and VL): the highest this CPU has" or "avx2 (...): capped by
    // RUDRA_ISA=avx2; this CPU has avx512".
    std::string describe() const;
    // Why a level is not allowed, for an implementation that needs it ("" when it is allowed).
    std::string refusal(Isa isa) const;

private:
    CpuFeatures cpu_;
    Isa top_, cpu_top_;
    std::string source_;
};

// The levels this CPU runs, highest first (what RUDRA_ISA may name here).
std::vector<Isa> cpu_levels(const CpuFeatures& cpu);

// The process's gate: this CPU, capped by the environment variable RUDRA_ISA when it is set
// (the kernels' one setting, so that a cap reaches every process of a job, MPI ranks and test
// programs alike). Made on first use and never changed afterwards. An unknown or unsupported
// RUDRA_ISA throws std::invalid_argument naming the choices, at every call: programs ask for it
// first thing, so that the error comes before any work.
const IsaGate& isa_gate();

// How this binary was compiled: "portable (x86-64 baseline)" or "native (-march=native: ...)".
// A native build on a CPU that lacks what it was compiled for is refused by isa_gate() with an
// error saying so, rather than left to stop at an illegal instruction.
std::string build_target();

}  // namespace rudra::kernels
