#include "placement/placement.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace rudra::placement {
namespace {

int count_distinct(const std::vector<CpuTopology::Pu>& pus, int CpuTopology::Pu::*field) {
    std::set<int> s;
    for (const auto& p : pus) s.insert(p.*field);
    return static_cast<int>(s.size());
}

// PUs of the given domains grouped by core, cores in topology order.
std::vector<std::vector<const CpuTopology::Pu*>> cores_of(const CpuTopology& topo, const std::vector<int>& numa) {
    std::vector<std::vector<const CpuTopology::Pu*>> cores;
    int last_core = -1;
    for (const auto& p : topo.pus) {
        if (std::find(numa.begin(), numa.end(), p.numa) == numa.end()) continue;
        if (cores.empty() || p.core != last_core) cores.emplace_back();
        cores.back().push_back(&p);
        last_core = p.core;
    }
    return cores;
}

// Threads onto cores: one per core round after round, the k-th PU of each core in round k.
void fill_threads(RankPlan& plan, const std::vector<std::vector<const CpuTopology::Pu*>>& cores, int threads) {
    size_t max_pus = 0;
    for (const auto& c : cores) max_pus = std::max(max_pus, c.size());
    for (int t = 0; t < threads; ++t) {
        const size_t round = (static_cast<size_t>(t) / cores.size());
        const auto& core = cores[static_cast<size_t>(t) % cores.size()];
        const CpuTopology::Pu* pu = core[round % core.size()];
        plan.threads.push_back({pu->os_index, pu->core, pu->numa});
    }
    if (static_cast<size_t>(threads) > cores.size()) {
        plan.shares_cores = true;
        std::ostringstream s;
        s << threads << " threads on " << cores.size() << " cores: "
          << (static_cast<size_t>(threads) <= cores.size() * max_pus ? "using SMT siblings" : "more threads than PUs");
        plan.note = s.str();
    }
}

}  // namespace

int CpuTopology::cores() const {
    std::set<std::pair<int, int>> s;
    for (const auto& p : pus) s.insert({p.package, p.core});
    return static_cast<int>(s.size());
}
int CpuTopology::numa_nodes() const { return count_distinct(pus, &Pu::numa); }
int CpuTopology::packages() const { return count_distinct(pus, &Pu::package); }

std::vector<RankPlan> plan_placement(const CpuTopology& topo, int ranks, int threads) {
    if (topo.pus.empty()) throw std::invalid_argument("placement: the topology has no processing units");
    if (ranks < 1 || threads < 1) throw std::invalid_argument("placement: ranks and threads must be at least 1");
    std::vector<int> domains;
    for (const auto& p : topo.pus)
        if (std::find(domains.begin(), domains.end(), p.numa) == domains.end()) domains.push_back(p.numa);
    const int D = static_cast<int>(domains.size());
    std::vector<RankPlan> plans(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
        RankPlan& plan = plans[static_cast<size_t>(r)];
        plan.local_rank = r;
        if (ranks <= D) {
            // Whole domains: rank r gets domains [r*D/ranks, (r+1)*D/ranks).
            for (int d = r * D / ranks; d < (r + 1) * D / ranks; ++d) plan.numa_nodes.push_back(domains[static_cast<size_t>(d)]);
            fill_threads(plan, cores_of(topo, plan.numa_nodes), threads);
            continue;
        }
        // Shared domains: ranks are spread evenly over the domains, and within a domain each
        // gets a contiguous run of its cores (all of them cycle when the run is empty).
        const int d = static_cast<int>(static_cast<long>(r) * D / ranks);
        const int first = static_cast<int>((static_cast<long>(d) * ranks + D - 1) / D);  // first rank in domain d
        const int last = static_cast<int>((static_cast<long>(d + 1) * ranks + D - 1) / D);
        const int in_domain = last - first, k = r - first;
        plan.numa_nodes.push_back(domains[static_cast<size_t>(d)]);
        const auto all = cores_of(topo, plan.numa_nodes);
        const size_t n = all.size();
        const size_t begin = n * static_cast<size_t>(k) / static_cast<size_t>(in_domain),
                     end = n * static_cast<size_t>(k + 1) / static_cast<size_t>(in_domain);
        std::vector<std::vector<const CpuTopology::Pu*>> mine(all.begin() + static_cast<long>(begin),
                                                              all.begin() + static_cast<long>(end));
        if (mine.empty()) {
            mine.push_back(all[begin % n]);
            plan.note = std::to_string(in_domain) + " ranks share " + std::to_string(n) + " cores of NUMA domain " +
                        std::to_string(domains[static_cast<size_t>(d)]);
        }
        fill_threads(plan, mine, threads);
        if (end - begin < static_cast<size_t>(threads)) plan.shares_cores = true;
    }
    return plans;
}

std::string describe_topology(const CpuTopology& topo) {
    std::ostringstream s;
    s << topo.packages() << " package(s), " << topo.numa_nodes() << " NUMA domain(s), " << topo.cores() << " cores, "
      << topo.pus.size() << " PUs (" << topo.source << ")";
    return s.str();
}

std::string describe_plan(const RankPlan& plan) {
    std::ostringstream s;
    s << "rank " << plan.local_rank << ": NUMA";
    for (int d : plan.numa_nodes) s << ' ' << d;
    s << ", threads on PUs";
    for (const auto& t : plan.threads) s << ' ' << t.pu_os_index;
    if (!plan.note.empty()) s << " (" << plan.note << ")";
    return s.str();
}

}  // namespace rudra::placement
