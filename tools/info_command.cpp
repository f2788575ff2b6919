// `rudra info`: what this machine and build offer, and where a node's ranks and threads would
// run: the topology (from hwloc, or a synthetic one), the CPU's features and the ISA gate, what
// each operation may run under it, the backends in this build, and the placement plan.
#include <omp.h>

#include <cstdio>
#include <stdexcept>

#include "kernels/conv.h"
#include "kernels/isa.h"
#include "kernels/bf16/bgemm.h"
#include "kernels/lrn.h"
#include "kernels/onednn_isa.h"
#include "kernels/pooling.h"
#include "kernels/relu.h"
#include "kernels/transpose.h"
#include "placement/placement.h"
#include "kernels/sgemm/sgemm.h"
#include "tools/commands.h"

namespace rudra::tools {

namespace {

// What each operation with ISA-specific implementations may run under the gate, in order.
void print_operations(const kernels::IsaGate& gate) {
    const auto& choice = kernels::selected_micro_kernel();
    const kernels::MicroKernel& k = choice.kernel;
    std::printf("operations (implementations in order: the first the gate allows and the shape suits runs;\n"
                "  `rudra time` shows each layer's choice):\n");
    std::string micro;
    for (const kernels::MicroKernel* m : kernels::runnable_micro_kernels(gate))
        micro += (micro.empty() ? "" : ", ") + std::string(m->name);
    std::printf("  sgemm micro-kernel: %s (allowed: %s), tile %dx%d, blocks mc %d kc %d nc %d: %s\n", k.name,
                micro.c_str(), k.mr, k.nr, k.mc, k.kc, k.nc, choice.reason.c_str());
    std::printf("  convolution (own): implicit_%s where the layer allows (stride 1: indirect and gather tiles of %s), "
                "else im2col + sgemm_%s\n",
                k.name, k.indirect ? k.name : "no micro-kernel here", k.name);
    const kernels::Bf16MicroKernel& bk = kernels::selected_bf16_micro_kernel();
    std::printf("  BF16 GEMM micro-kernel (BF16 inputs, FP32 sums): %s, tile %dx%d%s\n",
                kernels::bf16_micro_kernel_choice().c_str(), bk.mr, bk.nr,
                kernels::has_bf16_dot(gate.top()) ? "" : "; this level has no BF16 dot products");
    std::printf("  transpose: %s\n", kernels::transpose_impls(gate).c_str());
    std::printf("  max pooling: %s\n", kernels::PoolKernel::implementations(kernels::PoolMethod::Max, gate).c_str());
    std::printf("  average pooling: %s\n",
                kernels::PoolKernel::implementations(kernels::PoolMethod::Average, gate).c_str());
    std::printf("  LRN: %s\n", kernels::LrnKernel::implementations(gate).c_str());
    std::printf("  ReLU: %s\n", kernels::ReluKernel::implementations(gate).c_str());
#ifdef RUDRA_HAVE_DNNL
    if (gate.capped())
        std::printf("  oneDNN: its own dispatch, capped at %s to follow the gate\n",
                    kernels::onednn_cap_name(gate.top()));
    else
        std::printf("  oneDNN: its own dispatch\n");
#endif
}

}  // namespace

int run_info(const InfoOptions& o) {
    const placement::CpuTopology topo = placement::read_topology(o.topology);
    std::printf("topology: %s\n", placement::describe_topology(topo).c_str());
    const kernels::IsaGate& gate = kernels::isa_gate();
    std::string levels;
    for (kernels::Isa l : kernels::cpu_levels(gate.cpu())) levels += (levels.empty() ? "" : ", ") + std::string(kernels::isa_name(l));
    const std::string features = kernels::describe_features(gate.cpu());
    std::printf("build: %s\n", kernels::build_target().c_str());
    std::printf("CPU features: %s\n", features.empty() ? "none of the gated ones" : features.c_str());
    std::printf("ISA levels this CPU runs: %s (RUDRA_ISA caps them)\n", levels.c_str());
    std::printf("ISA gate: %s\n", gate.describe().c_str());
    print_operations(gate);
    std::string conv;
    for (auto be : {kernels::ConvBackend::Own, kernels::ConvBackend::Blis, kernels::ConvBackend::Onednn})
        if (kernels::conv_backend_available(be)) conv += (conv.empty() ? "" : ", ") + std::string(kernels::conv_backend_name(be));
    std::printf("convolution backends: %s, auto\n", conv.c_str());
#ifdef RUDRA_HAVE_MPI
    std::printf("MPI: yes (rudra dist)\n");
#else
    std::printf("MPI: no (rudra dist is not built)\n");
#endif
    const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
    std::printf("placement of %d rank(s) x %d thread(s) on this node:\n", o.ranks, threads);
    for (const placement::RankPlan& p : placement::plan_placement(topo, o.ranks, threads))
        std::printf("  %s\n", placement::describe_plan(p).c_str());
    return 0;
}


}  // namespace rudra::tools
