// Where threads run: the machine's processing units (PUs) grouped into cores, NUMA domains and
// packages, and a plan that places a node's ranks and their OpenMP threads on them. The planner
// is plain logic over a CpuTopology, so it is tested on synthetic topologies (hwloc's
// "pack:2 numa:2 core:11 pu:4" strings) that this one-NUMA machine cannot show.
#pragma once
#include <string>
#include <vector>

namespace rudra::placement {

struct CpuTopology {
    struct Pu {
        int os_index;  // what the OS and hwloc bind to
        int core, numa, package;  // logical indexes, 0-based
    };
    std::vector<Pu> pus;  // in topology order: PUs of a core together, cores of a domain together
    std::string source;   // "hwloc", "hwloc synthetic <desc>" or "sysconf (no hwloc)"
    int cores() const;
    int numa_nodes() const;
    int packages() const;
};

// The topology of this machine, or of hwloc's synthetic description when `synthetic` is set.
// Without hwloc: one package, one NUMA domain, one core per online CPU (synthetic: an error).
CpuTopology read_topology(const std::string& synthetic = "");

struct ThreadPlace {
    int pu_os_index, core, numa;
};

struct RankPlan {
    int local_rank = 0;
    std::vector<int> numa_nodes;        // the domains the rank's threads and memory use
    std::vector<ThreadPlace> threads;   // thread t of the rank's OpenMP team runs here
    bool shares_cores = false;          // more threads than the rank's domains have cores: SMT or sharing
    std::string note;                   // why, when the plan had to compromise
};

// Places `ranks` ranks of `threads` threads each on the topology. Ranks get whole NUMA domains
// when there are at least as many domains as ranks (several domains each when there are more),
// else they share domains in contiguous runs of cores; within a rank, threads take distinct
// cores first and the cores' further PUs (SMT) only when the cores run out.
std::vector<RankPlan> plan_placement(const CpuTopology& topo, int ranks, int threads);

// Binds the calling OpenMP team (threads of the rank run the binding in a parallel region) and
// the process's future allocations (first touch, on the rank's domains) to the plan. Returns a
// line saying what was done, or why nothing was (no hwloc, or a refused binding).
std::string apply_placement(const RankPlan& plan);
// Binds the calling thread to all of the plan's PUs: for helper threads (the data prefetcher),
// which would otherwise inherit the single PU of the thread that started them. Returns "" or
// why it did not.
std::string bind_helper_thread(const RankPlan& plan);

std::string describe_topology(const CpuTopology& topo);
std::string describe_plan(const RankPlan& plan);

}  // namespace rudra::placement
