// Run-time choice of the micro-kernel: CPU feature detection (features, not CPU names: under
// emulation the name checks fail while the feature bits are right), the RUDRA_SGEMM_KERNEL
// override and the RUDRA_VERBOSE report.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/sgemm/sgemm.h"

#if defined(__powerpc64__)
#include <sys/auxv.h>
#endif

namespace rudra::kernels {
namespace {

std::vector<const MicroKernel*> built_kernels() {
    std::vector<const MicroKernel*> all;
    for (const MicroKernel* k : {mma_micro_kernel(), avx512_micro_kernel(), vsx_micro_kernel(), avx2_micro_kernel(),
                                 reference_micro_kernel()})
        if (k) all.push_back(k);
    return all;
}

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::string(v) != "0";
}

std::string names(const std::vector<const MicroKernel*>& ks) {
    std::string s;
    for (const MicroKernel* k : ks) s += (s.empty() ? "" : ", ") + std::string(k->name);
    return s;
}

[[noreturn]] void fatal(const std::string& what) {
    std::fprintf(stderr, "rudra: %s\n", what.c_str());
    std::exit(2);
}

// RUDRA_SGEMM_BLOCKS="mc,kc,nc": positive, mc a multiple of mr, nc of nr.
void override_blocks(MicroKernel& k, const char* text, std::string& reason) {
    int mc = 0, kc = 0, nc = 0;
    char tail = 0;
    if (std::sscanf(text, "%d,%d,%d%c", &mc, &kc, &nc, &tail) != 3 || mc <= 0 || kc <= 0 || nc <= 0)
        fatal(std::string("RUDRA_SGEMM_BLOCKS='") + text + "': expected three positive integers mc,kc,nc");
    if (mc % k.mr || nc % k.nr)
        fatal(std::string("RUDRA_SGEMM_BLOCKS='") + text + "': mc must be a multiple of " + std::to_string(k.mr) +
              " and nc of " + std::to_string(k.nr) + " for kernel " + k.name);
    k.mc = mc;
    k.kc = kc;
    k.nc = nc;
    reason += std::string("; blocks from RUDRA_SGEMM_BLOCKS=") + text;
}

// Cache blocks by CPU family where they differ from the kernel's defaults (which suit Intel
// cores). On AMD Zen 4 a k-block of 1024 updates each C tile a third as often as 384 and its
// streams from L2 keep up: 2048^3 went from 86-88% to 93% of peak on one core (RUDRA_SGEMM_BLOCKS
// sweeps, the same run as BLIS at 90-92%).
void blocks_for_cpu(MicroKernel& k, std::string& reason) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_is("amd")) return;
    const std::string name = k.name;
    if (name == "avx512") {
        k.mc = 192;
        k.kc = 1024;
    } else if (name == "avx2") {
        k.mc = 192;
        k.kc = 512;
    } else {
        return;
    }
    reason += "; blocks for AMD cores";
#else
    (void)k;
    (void)reason;
#endif
}

KernelChoice choose() {
    KernelChoice choice{*reference_micro_kernel(), ""};
    if (const char* forced = std::getenv("RUDRA_SGEMM_KERNEL"); forced && *forced) {
        try {
            choice.kernel = micro_kernel_by_name(forced);
        } catch (const std::invalid_argument& e) {
            fatal(std::string("RUDRA_SGEMM_KERNEL: ") + e.what());
        }
        choice.reason = std::string("forced by RUDRA_SGEMM_KERNEL=") + forced;
    } else {
        choice.kernel = *runnable_micro_kernels().front();
        choice.reason = std::string("the fastest this CPU supports (runnable: ") + names(runnable_micro_kernels()) + ")";
    }
    blocks_for_cpu(choice.kernel, choice.reason);
    if (const char* blocks = std::getenv("RUDRA_SGEMM_BLOCKS"); blocks && *blocks)
        override_blocks(choice.kernel, blocks, choice.reason);
    if (env_flag("RUDRA_VERBOSE")) {
        const MicroKernel& k = choice.kernel;
        std::fprintf(stderr, "rudra: sgemm micro-kernel %s (%s), tile %dx%d, blocks mc %d kc %d nc %d: %s\n", k.name,
                     k.isa, k.mr, k.nr, k.mc, k.kc, k.nc, choice.reason.c_str());
    }
    return choice;
}

}  // namespace

bool cpu_supports(const MicroKernel& kernel) {
    const std::string name = kernel.name;
    if (name == "reference") return true;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (name == "avx512") return __builtin_cpu_supports("avx512f");
    if (name == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(__powerpc64__)
    constexpr unsigned long kHwcapVsx = 0x00000080, kHwcap2Mma = 0x00020000;
    if (name == "vsx") return (getauxval(AT_HWCAP) & kHwcapVsx) != 0;
    if (name == "mma") return (getauxval(AT_HWCAP2) & kHwcap2Mma) != 0;
#endif
    return false;
}

std::vector<const MicroKernel*> runnable_micro_kernels() {
    std::vector<const MicroKernel*> ok;
    for (const MicroKernel* k : built_kernels())
        if (cpu_supports(*k)) ok.push_back(k);
    return ok;
}

const MicroKernel& micro_kernel_by_name(const std::string& name) {
    for (const MicroKernel* k : built_kernels()) {
        if (name != k->name) continue;
        if (!cpu_supports(*k))
            throw std::invalid_argument("sgemm kernel '" + name + "' needs " + k->isa +
                                        ", which this CPU lacks (runnable: " + names(runnable_micro_kernels()) + ")");
        return *k;
    }
    throw std::invalid_argument("unknown sgemm kernel '" + name + "' (this build has: " + names(built_kernels()) +
                                ")");
}

const KernelChoice& selected_micro_kernel() {
    // Decided once and never changed afterwards: immutable after initialisation.
    static const KernelChoice choice = choose();
    return choice;
}

}  // namespace rudra::kernels
