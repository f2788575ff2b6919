// oneDNN dispatches on the CPU by itself; where the process's ISA gate is capped (RUDRA_ISA), the
// same cap is handed to it (dnnl_set_max_cpu_isa), so that `auto` and `rudra bench` compare
// like with like. oneDNN takes the cap only before its first primitive, so every entry into
// oneDNN calls this first. Its lowest level is SSE4.1, which stands for "reference" here.
#pragma once
#include "kernels/isa.h"

namespace rudra::kernels {

#ifdef RUDRA_HAVE_DNNL
void cap_onednn_isa();
// oneDNN's name for the cap that matches a level of the gate ("avx512_core", "avx2", "sse41").
const char* onednn_cap_name(Isa level);
#endif

}  // namespace rudra::kernels
