// oneDNN dispatches on the CPU by itself; where the process's ISA gate is capped (RUDRA_ISA), the
// same cap is handed to it (dnnl_set_max_cpu_isa), so that `auto` and `rudra bench` compare
// like with like. oneDNN takes the cap only before its first primitive, so every entry into
// oneDNN calls this first. Its lowest level is SSE4.1, which stands for "reference" here.
#pragma once

namespace rudra::kernels {

#ifdef RUDRA_HAVE_DNNL
void cap_onednn_isa();
#endif

}  // namespace rudra::kernels
