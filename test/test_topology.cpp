// Rudra-adv's tree of parameter servers: the rank layout every rank computes, the root's update
// rule over relayed sums (each gradient counted, clocked and modulated as if it came alone), and
// whole runs of root PS + leaf PSs + learners + statistics server on the in-process transport.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "dist/ps/learner.h"
#include "dist/ps/parameter_server.h"
#include "dist/ps/relay_server.h"
#include "dist/ps/stats_server.h"
#include "dist/ps/topology.h"
#include "dist/ps/update_rule.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/inprocess_transport.h"
#include "nn/solver.h"
#include "test/dist_toys.h"

using namespace rudra;
using namespace rudra::dist;
using namespace rudra::dist_toys;

namespace {

std::vector<int> consecutive_nodes(int size, int per_node) {
    std::vector<int> nodes;
    for (int r = 0; r < size; ++r) nodes.push_back(r / per_node);
    return nodes;
}

}  // namespace

TEST_CASE("layout: base puts every learner below rank 0; adv a leaf PS on each node, below the root by fan-out") {
    const RankLayout base = RankLayout::make(Topology::Base, std::vector<int>(6, 0), 0);
    CHECK(base.learners() == std::vector<int>{2, 3, 4, 5});
    CHECK(base.relays().empty());
    for (int r : base.learners()) CHECK(base.parent(r) == 0);
    CHECK(base.learner_index(4) == 2);
    CHECK(base.role_name(0) == "parameter server");

    // 18 ranks in nodes of 4: {0,1,2,3} {4..7} {8..11} {12..15} {16,17}.
    const RankLayout adv = RankLayout::make(Topology::Adv, consecutive_nodes(18, 4), 0);
    CHECK(adv.relays() == std::vector<int>{2, 4, 8, 12, 16});
    CHECK(adv.learners() == std::vector<int>{3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17});
    for (int relay : adv.relays()) CHECK(adv.parent(relay) == 0);
    CHECK(adv.parent(6) == 4);
    CHECK(adv.parent(17) == 16);
    CHECK(adv.children(4) == std::vector<int>{5, 6, 7});
    CHECK(adv.learners_below(8) == std::vector<int>{9, 10, 11});
    CHECK(adv.learners_below(0).size() == adv.learners().size());
    CHECK(adv.role_name(0) == "root parameter server");
    CHECK(adv.role_name(4) == "leaf parameter server");
    CHECK(adv.to_json().at("ranks").size() == 18);
    CHECK(adv.describe().find("node 1: rank 4 leaf parameter server (parent 0), learners 5 6 7") != std::string::npos);

    // adv*: the same PS tree, and a binary broadcast tree over the learners in rank order.
    const RankLayout star = RankLayout::make(Topology::AdvStar, consecutive_nodes(18, 4), 0, 2);
    CHECK(star.relays() == adv.relays());
    CHECK(star.broadcast_children(0) == std::vector<int>{3, 5});
    CHECK(star.broadcast_children(3) == std::vector<int>{6, 7});
    CHECK(star.broadcast_children(5) == std::vector<int>{9, 10});
    CHECK(star.broadcast_parent(9) == 5);
    CHECK(star.broadcast_parent(5) == 0);
    CHECK(star.broadcast_children(17).empty());
    CHECK(star.broadcast_children(2).empty());  // a leaf PS takes no part
    CHECK(adv.broadcast_parent(3) == -1);
    // The ranks each one beats to besides the root: the PS tree's and the broadcast tree's.
    CHECK(star.peers(4) == std::vector<int>{5, 6, 7});
    CHECK(star.peers(5) == std::vector<int>{4, 9, 10});
    CHECK(star.peers(6) == std::vector<int>{3, 4, 11, 13});
    CHECK(star.peers(3) == std::vector<int>{2, 6, 7});
    CHECK(adv.peers(6) == std::vector<int>{4});
    CHECK(base.peers(3).empty());
    CHECK(star.peers(1).empty());
    // A fan-out far past the learners (and past an int times a node index): the root sends to
    // every learner, nobody forwards.
    const RankLayout wide = RankLayout::make(Topology::AdvStar, consecutive_nodes(18, 4), 0, 1500000000);
    CHECK(wide.broadcast_children(0) == wide.learners());
    for (int l : wide.learners()) {
        CHECK(wide.broadcast_children(l).empty());
        CHECK(wide.broadcast_parent(l) == 0);
    }
    // Every learner hears from exactly one parent, and the parents' children cover all of them.
    std::vector<int> covered;
    for (int r = 0; r < star.size(); ++r)
        for (int c : star.broadcast_children(r)) {
            CHECK(star.broadcast_parent(c) == r);
            covered.push_back(c);
        }
    std::sort(covered.begin(), covered.end());
    CHECK(covered == star.learners());
    CHECK(RankLayout::make(Topology::AdvStar, consecutive_nodes(18, 4), 0, 4).broadcast_children(0).size() == 4);
    CHECK(star.to_json().at("broadcast_fan_out") == 2);
    CHECK(parse_topology("adv*") == Topology::AdvStar);

    // Fan-out 2: relays 2 and 4 below the root, 8 and 12 below 2, 16 below 4.
    const RankLayout tree = RankLayout::make(Topology::Adv, consecutive_nodes(18, 4), 2);
    CHECK(tree.parent(2) == 0);
    CHECK(tree.parent(4) == 0);
    CHECK(tree.parent(8) == 2);
    CHECK(tree.parent(12) == 2);
    CHECK(tree.parent(16) == 4);
    CHECK(tree.role_name(2) == "inner parameter server");
    CHECK(tree.learners_below(2) == std::vector<int>{3, 9, 10, 11, 13, 14, 15});
    CHECK(tree.children(0) == std::vector<int>{2, 4});

    // Node numbers need not be consecutive or sorted: ranks sharing a number share a node.
    const RankLayout scattered = RankLayout::make(Topology::Adv, {7, 7, 3, 7, 7, 3, 3}, 0);
    CHECK(scattered.relays() == std::vector<int>{3, 2});  // rank 0's node first
    CHECK(scattered.children(2) == std::vector<int>{5, 6});
    CHECK(scattered.children(3) == std::vector<int>{4});

    // A node with one rank (besides 0 and 1) cannot hold a leaf PS and a learner.
    CHECK_THROWS_WITH(RankLayout::make(Topology::Adv, consecutive_nodes(9, 4), 0),
                      doctest::Contains("node 2 has only rank 8"));
    CHECK_THROWS_WITH(RankLayout::make(Topology::Base, {0, 0}, 0), doctest::Contains("at least 3 ranks"));
    CHECK_THROWS(parse_topology("ring"));
}

TEST_CASE("relayed sums: the root counts, clocks and modulates each gradient as if it came alone") {
    // Gradients span the whole arena, padding included, as a learner's flat buffer does.
    const size_t floats = vector_store(2).size();
    auto grad = [floats](float a, float b) {
        std::vector<float> g(floats, 0.0f);
        g[0] = a;
        g[1] = b;
        return g;
    };
    const std::vector<float> v1 = grad(1, 2), v2 = grad(3, 4), v3 = grad(5, 6), v12 = grad(4, 6);
    const float *g1 = v1.data(), *g2 = v2.data(), *g3 = v3.data(), *g12 = v12.data();
    SUBCASE("hardsync: a sum of two learners and a third learner's equal the three alone") {
        auto run = [&](bool bundled) {
            nn::ParamStore p = vector_store(2);
            nn::Solver solver(plain_sgd(0.5), p);
            UpdateRule rule(Protocol::hardsync(3), solver, p, 3, UpdateRuleConfig{});
            if (bundled) {
                CHECK_FALSE(rule.add_bundle({{0, 0}, {1, 0}}, g12));
                CHECK(rule.add_bundle({{2, 0}}, g3));
                // A second gradient of a timestamp from one learner breaks hardsync.
                CHECK(rule.add_bundle({{0, 1}}, g1) == false);
                CHECK_THROWS_WITH(rule.add_bundle({{0, 1}}, g1), doctest::Contains("second gradient"));
            } else {
                rule.add_gradient(0, 0, g1);
                rule.add_gradient(1, 0, g2);
                CHECK(rule.add_gradient(2, 0, g3));
            }
            CHECK(rule.timestamp() == 1);
            CHECK(rule.applied(2) == 1);
            return std::vector<float>(p.values(), p.values() + 2);
        };
        const std::vector<float> alone = run(false), relayed = run(true);
        CHECK(relayed[0] == doctest::Approx(alone[0]));
        CHECK(relayed[1] == doctest::Approx(alone[1]));
        CHECK(alone[0] == doctest::Approx(-0.5f * 3.0f));  // the mean gradient (1+3+5)/3
    }
    SUBCASE("softsync: staleness per gradient, the average rule over them, counts past c when a sum is whole") {
        nn::ParamStore p = vector_store(2);
        nn::Solver solver(plain_sgd(1.0), p);
        UpdateRuleConfig cfg;
        cfg.modulation = LrModulation::Average;
        UpdateRule rule(Protocol::softsync(4, 2), solver, p, 4, cfg);  // c = 2
        CHECK(rule.add_bundle({{0, 0}, {1, 0}}, g12));  // two gradients: an update
        CHECK(rule.timestamp() == 1);
        CHECK(rule.add_bundle({{2, 0}, {3, 1}, {0, 1}}, g12));  // three: learner 2 one update stale
        CHECK(rule.timestamp() == 2);
        CHECK(rule.staleness().gradients() == 5);
        CHECK(rule.staleness().histogram(2).at(1) == 1);  // learner 2's gradient was 1 stale
        CHECK(rule.staleness().histogram(3).at(0) == 1);
        CHECK(rule.last_lr_scale() == doctest::Approx(1.0));  // <sigma> = 1/3: max(1, .) = 1
        CHECK(rule.applied(0) == 2);
        CHECK_THROWS_WITH(rule.add_bundle({{1, 5}}, g1), doctest::Contains("ahead of the PS"));
        CHECK_THROWS_WITH(rule.add_bundle({{9, 0}}, g1), doctest::Contains("not one of the 4 learners"));
    }
    SUBCASE("per-gradient modulation needs each gradient: refused for sums") {
        nn::ParamStore p = vector_store(2);
        nn::Solver solver(plain_sgd(1.0), p);
        UpdateRuleConfig cfg;
        cfg.modulation = LrModulation::PerGradient;
        UpdateRule rule(Protocol::async(2), solver, p, 2, cfg);
        CHECK_THROWS(rule.add_bundle({{0, 0}}, g2));
    }
}

namespace {

struct TreeResult {
    std::vector<float> weights;
    PsResult ps;
    StalenessStats staleness{0};
    std::vector<nlohmann::ordered_json> epochs;
    nlohmann::ordered_json traffic;
    std::vector<RelaySummary> relays;
};

// Every rank of `layout` as a thread on the in-process hub.
// With `spread`, learner l's target is 3 + l - (lambda - 1) / 2: their gradients differ, and
// their mean still points at 3.
TreeResult run_tree(const RankLayout& layout, const Protocol& proto, bool overlap, int64_t samples_per_epoch,
                    int epochs, int n, bool spread = false) {
    InProcessHub hub(layout.size());
    TreeResult out;
    nn::ParamStore params = vector_store(n);
    const size_t floats = params.size();  // the arena, padded
    nn::Solver solver(plain_sgd(0.05), params);
    const int lambda = static_cast<int>(layout.learners().size());
    UpdateRule rule(proto, solver, params, lambda, UpdateRuleConfig{});
    std::vector<std::thread> threads;
    std::vector<std::unique_ptr<Quadratic>> models;
    // 2 ms per gradient: the extra hop of the tree floods the root sooner than one PS. At 1 ms,
    // under ThreadSanitizer beside a busy loop, async on adv did not converge in 2 runs of 4
    // (staleness 24 with 7 learners: the leaves' weights fell behind).
    for (int l = 0; l < lambda; ++l)
        models.push_back(std::make_unique<Quadratic>(floats, std::chrono::milliseconds(2)));
    if (spread)
        for (int l = 0; l < lambda; ++l) models[static_cast<size_t>(l)]->target = 3.0f + l - (lambda - 1) / 2.0f;
    out.relays.resize(layout.relays().size());
    for (int l = 0; l < lambda; ++l)
        threads.emplace_back([&, l] {
            const int rank = layout.learners()[static_cast<size_t>(l)];
            InProcessTransport t(hub, rank);
            Heartbeat hb(t, beats({0}));
            LearnerConfig lc;
            lc.ps_rank = layout.parent(rank);
            lc.overlap = overlap;
            lc.synchronous = proto.synchronous();
            lc.report_every = 3;
            lc.broadcast_parent = layout.broadcast_parent(rank);
            lc.broadcast_children = layout.broadcast_children(rank);
            run_learner(t, lc, models[static_cast<size_t>(l)]->work());
        });
    for (size_t i = 0; i < layout.relays().size(); ++i)
        threads.emplace_back([&, i] {
            const int rank = layout.relays()[i];
            InProcessTransport t(hub, rank);
            Heartbeat hb(t, beats({0}));
            RelayConfig rc;
            rc.parent = layout.parent(rank);
            rc.children = layout.children(rank);
            rc.param_floats = floats;
            rc.pulls_weights = layout.topology() != Topology::AdvStar;
            rc.share = std::max<int64_t>(1, proto.gradients_per_update() *
                                                static_cast<int64_t>(layout.learners_below(rank).size()) / lambda);
            out.relays[i] = run_relay(t, rc, hb, {});
        });
    threads.emplace_back([&] {
        InProcessTransport t(hub, 1);
        Heartbeat hb(t, beats({0}));
        StatsConfig sc;
        sc.heartbeat = &hb;
        sc.learners = lambda + static_cast<int>(layout.relays().size());
        for (int r = 0; r < layout.size(); ++r) sc.roles.push_back(layout.role_name(r));
        sc.param_floats = floats;
        sc.protocol = proto.name();
        run_stats_server(
            t, sc, [](const float*) { return TestResult{0.5, 1.0, -1.0, {}}; },
            [&](const nlohmann::ordered_json& line) {
                if (line.value("event", "") == "traffic") out.traffic = line;
                else out.epochs.push_back(line);
            });
    });
    InProcessTransport t(hub, 0);
    PsConfig pc;
    pc.learner_ranks = layout.learners();
    for (int child : layout.children(0))
        if (layout.role(child) == RankLayout::Role::Relay) pc.relays.push_back({child, layout.learners_below(child)});
    pc.broadcast_children = layout.broadcast_children(0);
    pc.samples_per_epoch = samples_per_epoch;
    pc.epochs = epochs;
    std::vector<int> others;
    for (int r = 1; r < layout.size(); ++r) others.push_back(r);
    Heartbeat hb(t, beats(others));
    PsHooks hooks;
    hooks.heartbeat = &hb;
    ParameterServer ps(t, rule, params, pc, hooks);
    out.ps = ps.run();
    for (auto& th : threads) th.join();
    out.weights.assign(params.values(), params.values() + params.size());
    out.staleness = rule.staleness();
    return out;
}

}  // namespace

TEST_CASE("adv on the in-process transport: every protocol converges, counts every gradient, and ends cleanly") {
    struct Case {
        std::string protocol;
        int n;
        bool overlap;
        int fan_out;
        Topology topology;
    };
    for (const Case& c : {Case{"hardsync", 1, false, 0, Topology::Adv}, Case{"softsync", 1, true, 0, Topology::Adv},
                          Case{"softsync", 2, false, 1, Topology::Adv}, Case{"async", 1, true, 0, Topology::Adv},
                          Case{"hardsync", 1, false, 0, Topology::AdvStar}, Case{"softsync", 1, false, 1, Topology::AdvStar},
                          Case{"async", 1, false, 0, Topology::AdvStar}}) {
        CAPTURE(c.protocol);
        CAPTURE(c.n);
        CAPTURE(c.fan_out);
        CAPTURE(topology_name(c.topology));
        // 12 ranks in nodes of 4: {0,1,2,3} {4..7} {8..11}: leaf PSs 2, 4, 8; 7 learners.
        const RankLayout layout = RankLayout::make(c.topology, consecutive_nodes(12, 4), c.fan_out);
        REQUIRE(layout.learners().size() == 7);
        const Protocol proto = Protocol::parse(c.protocol, 7, c.n);
        auto fut = std::async(std::launch::async, [&] { return run_tree(layout, proto, c.overlap, 210, 3, 5); });
        REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);  // a hang fails
        const TreeResult r = fut.get();
        CAPTURE(r.ps.updates);
        CAPTURE(r.staleness.mean());
        CHECK(r.ps.end == PsResult::End::Finished);
        CHECK(r.ps.lost_ranks.empty());
        REQUIRE(r.epochs.size() == 3);
        CHECK(r.epochs.back().at("epoch") == 3);
        for (int i = 0; i < 5; ++i) CHECK(r.weights[static_cast<size_t>(i)] == doctest::Approx(3.0).epsilon(0.05));
        // Every gradient the root took is in the histograms, one by one.
        CHECK(r.staleness.gradients() == r.ps.samples);
        CHECK(r.ps.samples >= 630);
        int64_t relayed = 0;
        for (const RelaySummary& s : r.relays) relayed += s.gradients;
        CHECK(relayed >= r.ps.samples);  // those the leaves took, some after the last epoch
        // Updates: exactly lambda per update under hardsync (and never stale); at least c otherwise.
        if (proto.synchronous()) {
            CHECK(r.ps.updates * 7 == r.ps.samples);
            CHECK(r.staleness.max() == 0);
        } else {
            CHECK(r.ps.updates * proto.gradients_per_update() <= r.ps.samples);
        }
        // The root hears only its children: sums, each carrying one arena, fewer than the gradients.
        const auto& ranks = r.traffic.at("ranks");
        REQUIRE(ranks.size() == 12);
        CHECK(ranks[0].at("role") == "root parameter server");
        CHECK(ranks[2].at("role") == (c.fan_out == 1 ? "inner parameter server" : "leaf parameter server"));
        CHECK(ranks[5].at("role") == "learner");
        int64_t sums = 0;
        for (size_t i = 0; i < r.relays.size(); ++i)
            if (layout.parent(layout.relays()[i]) == 0) sums += r.relays[i].sums;
        CHECK(sums <= r.ps.samples + r.ps.dropped_gradients);
        // Hardsync: each child's sum holds all its learners' gradients of a timestamp (the fan-in).
        const auto children = static_cast<int64_t>(layout.children(0).size());
        if (proto.synchronous()) {
            CHECK(sums >= r.ps.updates * children);
            CHECK(sums <= (r.ps.updates + 1) * children);
        }
        CHECK(ranks[0].at("received_bytes").get<int64_t>() >= sums * int64_t(r.weights.size() * sizeof(float)));
        const int64_t versions = ranks[0].at("weight_replies").get<int64_t>();
        if (c.topology == Topology::Adv) {
            // New weights go down to the leaves, at most once per version and leaf (how many each
            // leaf gets depends on timing: under ThreadSanitizer async gave 132 for 270 updates).
            CHECK(versions >= static_cast<int64_t>(r.relays.size()));
            CHECK(versions <= (r.ps.updates + 1) * children);
            // A leaf PS's weights reach its learners: each answered some pulls with weights.
            for (const RelaySummary& s : r.relays) {
                CHECK(s.weights_in >= 1);
                CHECK(s.weight_replies >= 1);
            }
        } else {
            // adv*: a version goes down the broadcast tree once the previous one has left; one
            // made meanwhile is skipped (the next one sent is the newest).
            CHECK(versions >= 2);
            CHECK(versions <= r.ps.updates + 1);
            // The leaves take no weights and answer no pulls; the learners pull nothing, and
            // the first learner forwarded every version it received to its two children.
            for (const RelaySummary& s : r.relays) {
                CHECK(s.weights_in == 0);
                CHECK(s.weight_replies + s.empty_replies == 0);
            }
            const auto& first = ranks[static_cast<size_t>(layout.learners()[0])];
            CHECK(first.at("received_messages").get<int64_t>() >= 2);
            CHECK(first.at("sent_messages").get<int64_t>() >= 2 * ranks[0].at("weight_replies").get<int64_t>());
        }
    }
}

TEST_CASE("hardsync gives the same weights under every topology: the trees change who adds, not what") {
    // 7 learners each: base on 9 ranks, adv and adv* on 12 in nodes of 4 (the same 7 targets).
    const RankLayout adv = RankLayout::make(Topology::Adv, consecutive_nodes(12, 4), 0);
    const RankLayout star = RankLayout::make(Topology::AdvStar, consecutive_nodes(12, 4), 0, 2);
    const RankLayout base = RankLayout::make(Topology::Base, std::vector<int>(9, 0), 0);
    REQUIRE(base.learners().size() == 7);
    const Protocol proto = Protocol::hardsync(7);
    std::vector<std::vector<float>> weights;
    for (const RankLayout* layout : {&base, &adv, &star}) {
        auto fut = std::async(std::launch::async, [&] { return run_tree(*layout, proto, false, 70, 2, 5, true); });
        REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
        const TreeResult r = fut.get();
        CHECK(r.ps.updates == 20);
        weights.push_back(r.weights);
    }
    for (int i = 0; i < 5; ++i) {
        CAPTURE(i);
        CHECK(weights[0][static_cast<size_t>(i)] != doctest::Approx(0.0));
        CHECK(weights[1][static_cast<size_t>(i)] == doctest::Approx(weights[0][static_cast<size_t>(i)]).epsilon(1e-6));
        CHECK(weights[2][static_cast<size_t>(i)] == doctest::Approx(weights[0][static_cast<size_t>(i)]).epsilon(1e-6));
    }
}
