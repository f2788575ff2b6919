#include "placement/binding.h"

#include <stdexcept>

#include "placement/placement.h"

namespace rudra::placement {

Binding bind_threads(const std::string& mode, int ranks_on_node, int rank_on_node, int threads) {
    if (mode == "off") return {};
    if (mode != "on" && mode != "auto") throw std::runtime_error("--bind must be on, auto or off, not '" + mode + "'");
    const CpuTopology topo = read_topology();
    if (mode == "auto" && static_cast<size_t>(ranks_on_node) * threads > topo.pus.size())
        return {"threads not bound: " + std::to_string(ranks_on_node) + " rank(s) x " + std::to_string(threads) +
                    " thread(s) oversubscribe " + std::to_string(topo.pus.size()) + " PUs (--bind on forces it)",
                {}};
    const auto plans = plan_placement(topo, ranks_on_node, threads);
    const RankPlan plan = plans.at(static_cast<size_t>(rank_on_node));
    return {describe_plan(plan) + ": " + apply_placement(plan),
            [plan] { bind_helper_thread(plan); }};
}

}  // namespace rudra::placement
