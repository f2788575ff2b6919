// Gates capped at every ISA level the process's gate allows, highest first, for tests that run
// each implementation of an operation: a run under RUDRA_ISA=avx2 covers avx2 and reference, an
// uncapped one every level the CPU has.
#pragma once
#include <vector>

#include "kernels/isa.h"

inline std::vector<rudra::kernels::IsaGate> allowed_gates() {
    using namespace rudra::kernels;
    std::vector<IsaGate> gates;
    const IsaGate& process = isa_gate();
    for (Isa level : isa_levels())
        if (process.allows(level)) gates.emplace_back(process.cpu(), isa_name(level));
    return gates;
}
