// The placement planner on synthetic hwloc topologies (this machine has one NUMA domain) and on
// this machine's own.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "placement/placement.h"

using namespace rudra::placement;

namespace {

// Checks the properties every plan must have; returns the plans.
std::vector<RankPlan> checked_plan(const CpuTopology& topo, int ranks, int threads) {
    const auto plans = plan_placement(topo, ranks, threads);
    REQUIRE(plans.size() == static_cast<size_t>(ranks));
    std::map<int, const CpuTopology::Pu*> by_os;
    for (const auto& p : topo.pus) by_os[p.os_index] = &p;
    for (const RankPlan& plan : plans) {
        CAPTURE(describe_plan(plan));
        REQUIRE(plan.threads.size() == static_cast<size_t>(threads));
        for (const ThreadPlace& t : plan.threads) {
            REQUIRE(by_os.count(t.pu_os_index));
            CHECK(by_os[t.pu_os_index]->core == t.core);
            CHECK(by_os[t.pu_os_index]->numa == t.numa);
            // A rank's threads stay in its NUMA domains.
            CHECK(std::count(plan.numa_nodes.begin(), plan.numa_nodes.end(), t.numa) == 1);
        }
    }
    return plans;
}

std::set<int> cores_used(const RankPlan& plan) {
    std::set<int> s;
    for (const auto& t : plan.threads) s.insert(t.core);
    return s;
}

}  // namespace

TEST_CASE("POWER9-like: 2 sockets x 2 NUMA domains x 11 cores x SMT4") {
    const CpuTopology topo = read_topology("pack:2 numa:2 core:11 pu:4");
    CHECK(topo.packages() == 2);
    CHECK(topo.numa_nodes() == 4);
    CHECK(topo.cores() == 44);
    CHECK(topo.pus.size() == 176);

    SUBCASE("one learner per NUMA domain, one thread per core") {
        const auto plans = checked_plan(topo, 4, 11);
        std::set<int> domains, all_cores;
        for (const auto& p : plans) {
            REQUIRE(p.numa_nodes.size() == 1);
            domains.insert(p.numa_nodes[0]);
            CHECK(cores_used(p).size() == 11);  // distinct cores
            CHECK(!p.shares_cores);
            for (int c : cores_used(p)) CHECK(all_cores.insert(c).second);  // no core shared between ranks
        }
        CHECK(domains.size() == 4);
    }
    SUBCASE("SMT siblings only when the domain's cores run out") {
        const auto plans = checked_plan(topo, 4, 22);
        for (const auto& p : plans) {
            CHECK(cores_used(p).size() == 11);
            CHECK(p.shares_cores);
            std::set<int> pus;
            for (const auto& t : p.threads) pus.insert(t.pu_os_index);
            CHECK(pus.size() == 22);  // two different PUs of each core
        }
    }
    SUBCASE("two ranks take two domains each") {
        const auto plans = checked_plan(topo, 2, 22);
        CHECK(plans[0].numa_nodes == std::vector<int>{0, 1});
        CHECK(plans[1].numa_nodes == std::vector<int>{2, 3});
        for (const auto& p : plans) CHECK(cores_used(p).size() == 22);
    }
    SUBCASE("more ranks than domains: contiguous, disjoint runs of cores") {
        const auto plans = checked_plan(topo, 8, 5);
        std::set<int> all_cores;
        for (const auto& p : plans) {
            REQUIRE(p.numa_nodes.size() == 1);
            CHECK(cores_used(p).size() == 5);
            for (int c : cores_used(p)) CHECK(all_cores.insert(c).second);
        }
    }
}

TEST_CASE("x86 two-socket machine without SMT, and oversubscription") {
    const CpuTopology topo = read_topology("pack:2 numa:1 core:8 pu:1");
    CHECK(topo.numa_nodes() == 2);
    const auto plans = checked_plan(topo, 16, 1);  // a learner per core
    std::set<int> pus;
    for (const auto& p : plans) pus.insert(p.threads[0].pu_os_index);
    CHECK(pus.size() == 16);
    const auto over = checked_plan(topo, 32, 2);   // more ranks than cores: planned, flagged
    bool flagged = false;
    for (const auto& p : over) flagged = flagged || p.shares_cores;
    CHECK(flagged);
}

TEST_CASE("this machine's topology and bad input") {
    const CpuTopology topo = read_topology();
    CHECK(!topo.pus.empty());
    checked_plan(topo, 1, static_cast<int>(topo.pus.size()));
    CHECK_THROWS_AS(read_topology("pack:two"), std::invalid_argument);
    CHECK_THROWS_AS(plan_placement(topo, 0, 1), std::invalid_argument);
}
