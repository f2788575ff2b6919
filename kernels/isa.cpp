#include "kernels/isa.h"

#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <stdexcept>
#include <utility>

#if defined(__powerpc64__)
#include <sys/auxv.h>
#endif

namespace rudra::kernels {

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Reference: return "reference";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
        case Isa::Avx512Bf16: return "avx512_bf16";
        case Isa::Vsx: return "vsx";
        case Isa::Mma: return "mma";
    }
    return "?";
}

const char* isa_features(Isa isa) {
    switch (isa) {
        case Isa::Reference: return "portable C++ for the architecture's baseline";
        case Isa::Avx2: return "AVX2 and FMA";
        case Isa::Avx512: return "AVX-512 F, DQ, BW and VL";
        case Isa::Avx512Bf16: return "AVX-512 F, DQ, BW, VL and BF16";
        case Isa::Vsx: return "VSX";
        case Isa::Mma: return "POWER10 MMA";
    }
    return "?";
}

const std::vector<Isa>& isa_levels() {
#if defined(__x86_64__)
    static const std::vector<Isa> levels{Isa::Avx512Bf16, Isa::Avx512, Isa::Avx2, Isa::Reference};
#elif defined(__powerpc64__)
    static const std::vector<Isa> levels{Isa::Mma, Isa::Vsx, Isa::Reference};
#else
    static const std::vector<Isa> levels{Isa::Reference};
#endif
    return levels;
}

namespace {

std::string join_names(const std::vector<Isa>& levels) {
    std::string s;
    for (Isa l : levels) {
        if (!s.empty()) s += ", ";
        s += isa_name(l);
    }
    return s;
}

// Position in this architecture's order (0: highest), or -1 for another architecture's level.
int rank(Isa isa) {
    const auto& levels = isa_levels();
    for (size_t i = 0; i < levels.size(); ++i)
        if (levels[i] == isa) return static_cast<int>(i);
    return -1;
}

const char* architecture() {
#if defined(__x86_64__)
    return "x86-64";
#elif defined(__powerpc64__)
    return "ppc64le";
#else
    return "this architecture";
#endif
}

}  // namespace

std::string isa_level_names() { return join_names(isa_levels()); }

Isa fp32_level(Isa isa) { return isa == Isa::Avx512Bf16 ? Isa::Avx512 : isa; }

bool has_bf16_dot(Isa isa) { return isa == Isa::Avx512Bf16 || isa == Isa::Mma; }

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
#if defined(__x86_64__)
    // libgcc's detection also checks that the OS saves the AVX and AVX-512 registers (XCR0).
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
    f.amd = __builtin_cpu_is("amd");
#elif defined(__powerpc64__)
    constexpr unsigned long kHwcapVsx = 0x00000080, kHwcap2Mma = 0x00020000;
    f.vsx = (getauxval(AT_HWCAP) & kHwcapVsx) != 0;
    f.mma = (getauxval(AT_HWCAP2) & kHwcap2Mma) != 0;
#endif
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    f.l1d_bytes = std::max(0L, sysconf(_SC_LEVEL1_DCACHE_SIZE));
    f.l2_bytes = std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE));
    f.l3_bytes = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
    return f;
}

bool cpu_has(const CpuFeatures& f, Isa isa) {
    switch (isa) {
        case Isa::Reference: return true;
        case Isa::Avx2: return f.avx2 && f.fma;
        case Isa::Avx512: return f.avx512f && f.avx512dq && f.avx512bw && f.avx512vl && cpu_has(f, Isa::Avx2);
        case Isa::Avx512Bf16: return f.avx512bf16 && cpu_has(f, Isa::Avx512);
        case Isa::Vsx: return f.vsx;
        case Isa::Mma: return f.mma && f.vsx;
    }
    return false;
}

namespace {

// Every gated feature and its name, for listings and for comparing two sets of features.
constexpr std::pair<bool CpuFeatures::*, const char*> kFeatures[] = {
    {&CpuFeatures::avx2, "avx2"},         {&CpuFeatures::fma, "fma"},           {&CpuFeatures::avx512f, "avx512f"},
    {&CpuFeatures::avx512dq, "avx512dq"}, {&CpuFeatures::avx512bw, "avx512bw"}, {&CpuFeatures::avx512vl, "avx512vl"},
    {&CpuFeatures::avx512bf16, "avx512bf16"}, {&CpuFeatures::vsx, "vsx"},  {&CpuFeatures::mma, "mma"}};

}  // namespace

std::string describe_features(const CpuFeatures& f) {
    std::string s;
    for (const auto& [has, name] : kFeatures) {
        if (!(f.*has)) continue;
        if (!s.empty()) s += ' ';
        s += name;
    }
    return s;
}

std::vector<Isa> cpu_levels(const CpuFeatures& cpu) {
    std::vector<Isa> out;
    for (Isa l : isa_levels())
        if (cpu_has(cpu, l)) out.push_back(l);
    return out;
}

IsaGate::IsaGate(const CpuFeatures& cpu, const std::string& cap, const std::string& source)
    : cpu_(cpu), top_(Isa::Reference), cpu_top_(cpu_levels(cpu).front()), source_(source) {
    top_ = cpu_top_;
    if (cap.empty()) return;
    for (Isa l : isa_levels()) {
        if (cap != isa_name(l)) continue;
        if (!cpu_has(cpu, l))
            throw std::invalid_argument(source + "=" + cap + ": this CPU lacks " + isa_features(l) +
                                        " (it runs: " + join_names(cpu_levels(cpu)) + ")");
        top_ = l;
        return;
    }
    throw std::invalid_argument(source + "=" + cap + ": not an instruction-set level of this " + architecture() +
                                " build (choices: " + isa_level_names() + ")");
}

bool IsaGate::allows(Isa isa) const {
    const int r = rank(isa);
    return r >= 0 && r >= rank(top_) && cpu_has(cpu_, isa);
}

std::string IsaGate::describe() const {
    std::string s = std::string(isa_name(top_)) + " (" + isa_features(top_) + "): ";
    if (capped()) return s + "capped by " + source_ + "=" + isa_name(top_) + "; this CPU has " + isa_name(cpu_top_);
    return s + "the highest this CPU has";
}

std::string IsaGate::refusal(Isa isa) const {
    if (allows(isa)) return "";
    const std::string needs = std::string("needs ") + isa_name(isa);
    if (rank(isa) < 0) return needs + ", not an instruction-set level of " + architecture();
    if (!cpu_has(cpu_, isa)) return needs + ", which this CPU lacks";
    return needs + ", above the cap " + source_ + "=" + isa_name(top_);
}

namespace {

// The features this file was compiled to assume everywhere: a native build's -march.
CpuFeatures compiled_for() {
    CpuFeatures f;
#ifdef __AVX2__
    f.avx2 = true;
#endif
#ifdef __FMA__
    f.fma = true;
#endif
#ifdef __AVX512F__
    f.avx512f = true;
#endif
#ifdef __AVX512DQ__
    f.avx512dq = true;
#endif
#ifdef __AVX512BW__
    f.avx512bw = true;
#endif
#ifdef __AVX512VL__
    f.avx512vl = true;
#endif
#ifdef __AVX512BF16__
    f.avx512bf16 = true;
#endif
#ifdef __MMA__
    f.mma = true;
#endif
    return f;
}

// What the build assumes and this CPU lacks ("" when nothing).
std::string missing_from(const CpuFeatures& cpu) {
    const CpuFeatures need = compiled_for();
    CpuFeatures lack;
    for (const auto& [has, name] : kFeatures) lack.*has = need.*has && !(cpu.*has);
    return describe_features(lack);
}

IsaGate make_process_gate() {
    const CpuFeatures cpu = detect_cpu_features();
    if (const std::string lack = missing_from(cpu); !lack.empty())
        throw std::invalid_argument("this rudra was compiled for a CPU with " + lack + " (" + build_target() +
                                    "), which this CPU lacks; rebuild it portably (cmake -DRUDRA_NATIVE=OFF, the "
                                    "default)");
    const char* cap = std::getenv("RUDRA_ISA");
    return IsaGate(cpu, cap ? cap : "", "RUDRA_ISA");
}

}  // namespace

const IsaGate& isa_gate() {
    // A throwing initialiser leaves the static unmade, so every call reports the error again.
    static const IsaGate gate = make_process_gate();
    return gate;
}

std::string build_target() {
#ifdef RUDRA_NATIVE_BUILD
    const std::string assumed = describe_features(compiled_for());
    return std::string("native: -march=native, assumes ") + assumed;
#elif defined(__x86_64__)
    return "portable: x86-64 baseline (SSE2), wider ISAs only in gated functions";
#elif defined(__powerpc64__)
    return "portable: ppc64le baseline (POWER8 VSX), MMA only in gated functions";
#else
    return "portable";
#endif
}

}  // namespace rudra::kernels
