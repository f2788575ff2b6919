// CpuTopology from hwloc, and thread/memory binding with it. Without hwloc (RUDRA_HAVE_HWLOC
// undefined) the topology is one core per online CPU and binding is reported as unavailable.
#include <omp.h>
#include <unistd.h>

#include <sstream>
#include <stdexcept>

#include "placement/placement.h"

#ifdef RUDRA_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace rudra::placement {

#ifdef RUDRA_HAVE_HWLOC
namespace {

// Owns one loaded hwloc topology.
class Hwloc {
public:
    explicit Hwloc(const std::string& synthetic) {
        if (hwloc_topology_init(&topo_) != 0) throw std::runtime_error("hwloc: cannot initialise a topology");
        if (!synthetic.empty() && hwloc_topology_set_synthetic(topo_, synthetic.c_str()) != 0) {
            hwloc_topology_destroy(topo_);
            throw std::invalid_argument("hwloc: invalid synthetic topology '" + synthetic +
                                        "' (e.g. \"pack:2 numa:2 core:11 pu:4\")");
        }
        if (hwloc_topology_load(topo_) != 0) {
            hwloc_topology_destroy(topo_);
            throw std::runtime_error("hwloc: cannot load the topology");
        }
    }
    ~Hwloc() { hwloc_topology_destroy(topo_); }
    Hwloc(const Hwloc&) = delete;
    Hwloc& operator=(const Hwloc&) = delete;
    hwloc_topology_t get() const { return topo_; }

private:
    hwloc_topology_t topo_ = nullptr;
};

}  // namespace

CpuTopology read_topology(const std::string& synthetic) {
    Hwloc h(synthetic);
    hwloc_topology_t t = h.get();
    CpuTopology topo;
    topo.source = synthetic.empty() ? "hwloc" : "hwloc synthetic \"" + synthetic + "\"";
    const int n_numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    const int n_pu = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    for (int i = 0; i < n_pu; ++i) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, static_cast<unsigned>(i));
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
        int numa = 0;
        for (int d = 0; d < n_numa; ++d) {
            hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(d));
            if (node->cpuset && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
                numa = static_cast<int>(node->logical_index);
                break;
            }
        }
        topo.pus.push_back({static_cast<int>(pu->os_index), core ? static_cast<int>(core->logical_index) : i, numa,
                            pkg ? static_cast<int>(pkg->logical_index) : 0});
    }
    return topo;
}

std::string apply_placement(const RankPlan& plan) {
    Hwloc h("");
    hwloc_topology_t t = h.get();
    std::ostringstream msg;
    // Memory: the rank's NUMA domains, so that first touch by its threads lands there.
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    for (int d : plan.numa_nodes)
        if (hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(d)))
            hwloc_bitmap_set(nodes, node->os_index);
    const bool mem_ok =
        hwloc_set_membind(t, nodes, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) == 0;
    hwloc_bitmap_free(nodes);
    // Threads: each member of the OpenMP team binds itself to its PU.
    const int team = static_cast<int>(plan.threads.size());
    int failed = 0;
#pragma omp parallel num_threads(team) reduction(+ : failed)
    {
        const int tid = omp_get_thread_num();
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        hwloc_bitmap_only(set, static_cast<unsigned>(plan.threads[static_cast<size_t>(tid)].pu_os_index));
        if (hwloc_set_cpubind(t, set, HWLOC_CPUBIND_THREAD) != 0) failed += 1;
        hwloc_bitmap_free(set);
    }
    msg << "bound " << team - failed << " of " << team << " threads to their PUs; memory "
        << (mem_ok ? "bound to" : "not bound (refused) to") << " NUMA";
    for (int d : plan.numa_nodes) msg << ' ' << d;
    return msg.str();
}

std::string bind_helper_thread(const RankPlan& plan) {
    Hwloc h("");
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (const auto& th : plan.threads) hwloc_bitmap_set(set, static_cast<unsigned>(th.pu_os_index));
    const bool ok = hwloc_set_cpubind(h.get(), set, HWLOC_CPUBIND_THREAD) == 0;
    hwloc_bitmap_free(set);
    return ok ? "" : "the helper thread's binding was refused";
}

#else

CpuTopology read_topology(const std::string& synthetic) {
    if (!synthetic.empty())
        throw std::invalid_argument("synthetic topologies need hwloc (apt-get install libhwloc-dev and rebuild)");
    CpuTopology topo;
    topo.source = "sysconf (no hwloc)";
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < std::max(1L, n); ++i) topo.pus.push_back({i, i, 0, 0});
    return topo;
}

std::string apply_placement(const RankPlan&) { return "threads not bound: this build has no hwloc"; }
std::string bind_helper_thread(const RankPlan&) { return "this build has no hwloc"; }

#endif

}  // namespace rudra::placement
