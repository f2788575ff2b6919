// `rudra info`: what this machine and build offer, and where a node's ranks and threads would
// run: the topology (from hwloc, or a synthetic one), the CPU's micro-kernels and the chosen
// one with its blocks, the backends in this build, and the placement plan.
#include <omp.h>

#include <cstdio>
#include <stdexcept>

#include "kernels/conv.h"
#include "kernels/placement.h"
#include "kernels/sgemm/sgemm.h"
#include "tools/commands.h"

namespace rudra::tools {

int run_info(const InfoOptions& o) {
    const kernels::CpuTopology topo = kernels::read_topology(o.topology);
    std::printf("topology: %s\n", kernels::describe_topology(topo).c_str());
    std::string runnable;
    for (const kernels::MicroKernel* k : kernels::runnable_micro_kernels())
        runnable += (runnable.empty() ? "" : ", ") + std::string(k->name);
    const auto& choice = kernels::selected_micro_kernel();
    std::printf("sgemm micro-kernels this CPU runs: %s\n", runnable.c_str());
    std::printf("sgemm chosen: %s (%s), tile %dx%d, blocks mc %d kc %d nc %d: %s\n", choice.kernel.name,
                choice.kernel.isa, choice.kernel.mr, choice.kernel.nr, choice.kernel.mc, choice.kernel.kc,
                choice.kernel.nc, choice.reason.c_str());
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
    for (const kernels::RankPlan& p : kernels::plan_placement(topo, o.ranks, threads))
        std::printf("  %s\n", kernels::describe_plan(p).c_str());
    return 0;
}

Binding bind_threads(const std::string& mode, int ranks_on_node, int rank_on_node, int threads) {
    if (mode == "off") return {};
    if (mode != "on" && mode != "auto") throw std::runtime_error("--bind must be on, auto or off, not '" + mode + "'");
    const kernels::CpuTopology topo = kernels::read_topology();
    if (mode == "auto" && static_cast<size_t>(ranks_on_node) * threads > topo.pus.size())
        return {"threads not bound: " + std::to_string(ranks_on_node) + " rank(s) x " + std::to_string(threads) +
                    " thread(s) oversubscribe " + std::to_string(topo.pus.size()) + " PUs (--bind on forces it)",
                {}};
    const auto plans = kernels::plan_placement(topo, ranks_on_node, threads);
    const kernels::RankPlan plan = plans.at(static_cast<size_t>(rank_on_node));
    return {kernels::describe_plan(plan) + ": " + kernels::apply_placement(plan),
            [plan] { kernels::bind_helper_thread(plan); }};
}

}  // namespace rudra::tools
