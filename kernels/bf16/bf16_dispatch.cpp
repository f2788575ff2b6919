// Which BF16 micro-kernel and conversion run: the first of each list that the ISA gate allows.
#include <stdexcept>
#include <vector>

#include "kernels/bf16/bf16.h"
#include "kernels/bf16/bgemm.h"
#include "kernels/impl_list.h"

namespace rudra::kernels {
namespace {

struct KernelEntry {
    const char* name;
    const Bf16MicroKernel* kernel;
};

// The kernels in order of preference, each nullptr where this build lacks it.
std::vector<KernelEntry> kernel_list() {
    return {{"avx512_bf16", avx512_bf16_micro_kernel()}, {"mma", mma_bf16_micro_kernel()},
            {"reference", reference_bf16_micro_kernel()}};
}

template <class T>
std::string why_not(const T* impl, Isa isa, const IsaGate& gate) {
    if (!impl) return "-";
    return gate.refusal(isa);
}

const Bf16MicroKernel& choose(const IsaGate& gate, ImplChoice& choice) {
    const auto built = kernel_list();
    const KernelEntry list[] = {built[0], built[1], built[2]};
    const KernelEntry& e = first_taker(
        list, [&](const KernelEntry& k) { return why_not(k.kernel, k.kernel ? k.kernel->isa : Isa::Reference, gate); },
        choice);
    return *e.kernel;
}

struct Process {
    const Bf16MicroKernel* kernel;
    ImplChoice choice;
};

Process make_process_choice() {
    Process p{nullptr, {}};
    p.kernel = &choose(isa_gate(), p.choice);
    return p;
}

const Process& process_choice() {
    static const Process p = make_process_choice();
    return p;
}

}  // namespace

std::vector<const Bf16MicroKernel*> runnable_bf16_micro_kernels(const IsaGate& gate) {
    std::vector<const Bf16MicroKernel*> out;
    for (const KernelEntry& e : kernel_list())
        if (e.kernel && gate.allows(e.kernel->isa)) out.push_back(e.kernel);
    return out;
}

const Bf16MicroKernel& selected_bf16_micro_kernel() { return *process_choice().kernel; }

std::string bf16_micro_kernel_choice() { return process_choice().choice.describe(); }

const Bf16Convert& bf16_convert_for(const IsaGate& gate) {
    const Bf16Convert* fast = avx512_bf16_convert();
    if (fast && gate.allows(Isa::Avx512Bf16)) return *fast;
    return *portable_bf16_convert();
}

void to_bf16(const float* x, bf16* out, size_t n) {
    static const Bf16Convert& c = bf16_convert_for(isa_gate());
    c.to_bf16(x, out, n);
}

void from_bf16(const bf16* x, float* out, size_t n) {
    static const Bf16Convert& c = bf16_convert_for(isa_gate());
    c.from_bf16(x, out, n);
}

}  // namespace rudra::kernels
