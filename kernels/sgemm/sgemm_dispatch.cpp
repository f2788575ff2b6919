// Run-time choice of the micro-kernel: the fastest one the ISA gate (kernels/isa.h) allows, its
// cache blocks for the CPU family, the RUDRA_SGEMM_BLOCKS override and the RUDRA_VERBOSE report.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/impl_list.h"
#include "kernels/sgemm/sgemm.h"

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

// RUDRA_SGEMM_BLOCKS="mc,kc,nc": positive, mc a multiple of mr, nc of nr.
void override_blocks(MicroKernel& k, const char* text, std::string& reason) {
    int mc = 0, kc = 0, nc = 0;
    char tail = 0;
    if (std::sscanf(text, "%d,%d,%d%c", &mc, &kc, &nc, &tail) != 3 || mc <= 0 || kc <= 0 || nc <= 0)
        throw std::invalid_argument(std::string("RUDRA_SGEMM_BLOCKS='") + text +
                                    "': expected three positive integers mc,kc,nc");
    if (mc % k.mr || nc % k.nr)
        throw std::invalid_argument(std::string("RUDRA_SGEMM_BLOCKS='") + text + "': mc must be a multiple of " +
                                    std::to_string(k.mr) + " and nc of " + std::to_string(k.nr) + " for kernel " +
                                    k.name);
    k.mc = mc;
    k.kc = kc;
    k.nc = nc;
    reason += std::string("; blocks from RUDRA_SGEMM_BLOCKS=") + text;
}

int round_down(long v, int multiple, int lo, int hi) {
    return static_cast<int>(std::clamp(v / multiple * multiple, static_cast<long>(lo), static_cast<long>(hi)));
}

std::string kib(long bytes) { return std::to_string(bytes / 1024) + " KiB"; }

// Cache blocks from the detected caches, BLIS's analytical model (Low et al., 2016): the kc x nr
// B sliver that the register tiles of a block reuse fills the L1 data cache, the mc x kc A block
// half of L2, the kc x nc B panel a quarter of L3 (at most the kernel's nc: the C library reports
// a whole package's L3, 384 MiB on a 2-core share of an EPYC, and the panel is scratch memory of
// every GEMM-issuing thread). A cache the C library does not report keeps
// the kernel's default. On a Sapphire Rapids core (48 KiB L1d) the model gives the kc of 384
// that RUDRA_SGEMM_BLOCKS sweeps had found best for AVX-512.
//
// Measured tuning stays where it beats the model: on AMD cores a k-block of 1024 updates each C
// tile a third as often and its streams from L2 keep up (the measurements: docs/kernels.md).
// With AVX2 the model's blocks are kept: they ran as fast.
void blocks_for_cpu(MicroKernel& k, const CpuFeatures& cpu, std::string& reason) {
    std::string from;
    if (cpu.l1d_bytes > 0) {
        k.kc = round_down(cpu.l1d_bytes / (static_cast<long>(k.nr) * sizeof(float)), 16, 128, 1024);
        from += "L1d " + kib(cpu.l1d_bytes);
    }
    if (cpu.l2_bytes > 0) {
        k.mc = round_down(cpu.l2_bytes / 2 / (static_cast<long>(k.kc) * sizeof(float)), k.mr, k.mr, 1024);
        from += ", L2 " + kib(cpu.l2_bytes);
    }
    if (cpu.l3_bytes > 0) {
        k.nc = round_down(cpu.l3_bytes / 4 / (static_cast<long>(k.kc) * sizeof(float)), k.nr, 4 * k.nr, k.nc);
        from += ", L3 " + kib(cpu.l3_bytes);
    }
    if (!from.empty()) reason += "; blocks from the caches (" + (from[0] == ',' ? from.substr(2) : from) + ")";
    if (cpu.amd && k.isa == Isa::Avx512) {
        k.mc = 192;
        k.kc = 1024;
        reason += "; mc 192 kc 1024 measured on AMD cores";
    }
}

KernelChoice process_choice() {
    if (const char* old = std::getenv("RUDRA_SGEMM_KERNEL"); old && *old)
        throw std::invalid_argument(std::string("RUDRA_SGEMM_KERNEL=") + old +
                                    ": replaced by RUDRA_ISA, which caps every operation, not only SGEMM (" +
                                    isa_level_names() + ")");
    KernelChoice choice = choose_micro_kernel(isa_gate());
    if (const char* blocks = std::getenv("RUDRA_SGEMM_BLOCKS"); blocks && *blocks)
        override_blocks(choice.kernel, blocks, choice.reason);
    if (env_flag("RUDRA_VERBOSE")) {
        const MicroKernel& k = choice.kernel;
        std::fprintf(stderr, "rudra: sgemm micro-kernel %s (%s), tile %dx%d, blocks mc %d kc %d nc %d: %s\n", k.name,
                     isa_features(k.isa), k.mr, k.nr, k.mc, k.kc, k.nc, choice.reason.c_str());
    }
    return choice;
}

}  // namespace

std::vector<const MicroKernel*> runnable_micro_kernels(const IsaGate& gate) {
    std::vector<const MicroKernel*> ok;
    for (const MicroKernel* k : built_kernels())
        if (gate.allows(k->isa)) ok.push_back(k);
    return ok;
}

KernelChoice choose_micro_kernel(const IsaGate& gate) {
    std::string passed, last_why;
    for (const MicroKernel* k : built_kernels()) {
        if (gate.allows(k->isa)) {
            KernelChoice choice{*k, passed.empty() ? "first choice" : passed};
            blocks_for_cpu(choice.kernel, gate.cpu(), choice.reason);
            return choice;
        }
        add_passed(passed, last_why, k->name, gate.refusal(k->isa));
    }
    throw std::logic_error("no micro-kernel: the reference one is always allowed");
}

const KernelChoice& selected_micro_kernel() {
    // Decided once and never changed afterwards: immutable after initialisation.
    static const KernelChoice choice = process_choice();
    return choice;
}

KernelChoice micro_kernel_for(const IsaGate& gate) {
    return &gate == &isa_gate() ? selected_micro_kernel() : choose_micro_kernel(gate);
}

}  // namespace rudra::kernels
