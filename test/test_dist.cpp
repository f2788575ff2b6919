// The distributed runtime's logic on the in-process transport: aggregation counts, timestamps,
// staleness accounting, learning-rate modulation, whole PS + statistics server + learner runs
// for every protocol and mode (each must end), and hardsync with lambda learners of mini-batch
// mu against one learner of mini-batch lambda*mu on the same samples.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <future>
#include <set>
#include <thread>

#include "data/batch_stream.h"
#include "dist/ps/learner.h"
#include "dist/ps/parameter_server.h"
#include "dist/ps/schedule_record.h"
#include "dist/ps/stats_server.h"
#include "dist/ps/update_rule.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/inprocess_transport.h"
#include "dist/transport/wait_policy.h"
#include "nn/net.h"
#include "nn/solver.h"
#include "test/dist_toys.h"
#include "test/small_net.h"

using namespace rudra;
using namespace rudra::dist;
using namespace rudra::dist_toys;


TEST_CASE("protocol names: each parses to its kind and back; the kinds without a PS") {
    const std::pair<const char*, Protocol::Kind> named[] = {
        {"hardsync", Protocol::Kind::HardSync},     {"softsync", Protocol::Kind::SoftSync},
        {"async", Protocol::Kind::Async},           {"easgd", Protocol::Kind::Easgd},
        {"allreduce", Protocol::Kind::AllReduce},   {"gossip-pull", Protocol::Kind::GossipPull},
        {"gossip-push", Protocol::Kind::GossipPush},
    };
    for (const auto& [name, kind] : named) {
        CAPTURE(name);
        CHECK(Protocol::kind_named(name) == kind);
        const Protocol p = Protocol::parse(name, 4, 2);
        CHECK(p.kind() == kind);
        CHECK(p.name() == (kind == Protocol::Kind::SoftSync ? std::string("2-softsync") : std::string(name)));
        const bool no_ps = kind == Protocol::Kind::AllReduce || kind == Protocol::Kind::GossipPull ||
                           kind == Protocol::Kind::GossipPush;
        CHECK(Protocol::is_decentralized(kind) == no_ps);
        CHECK(p.has_parameter_server() == !no_ps);
    }
    CHECK_THROWS_WITH(Protocol::kind_named("downpour"),
                      "unknown protocol 'downpour' (hardsync, softsync, async, ksync, kasync, easgd, allreduce, gossip-pull, "
                      "gossip-push)");
}

TEST_CASE("aggregation counts: hardsync lambda, n-softsync floor(lambda/n), async 1") {
    CHECK(Protocol::hardsync(4).gradients_per_update() == 4);
    CHECK(Protocol::softsync(4, 1).gradients_per_update() == 4);
    CHECK(Protocol::softsync(4, 2).gradients_per_update() == 2);
    CHECK(Protocol::softsync(5, 2).gradients_per_update() == 2);
    CHECK(Protocol::softsync(4, 4).gradients_per_update() == 1);
    CHECK(Protocol::async().gradients_per_update() == 1);
    CHECK_THROWS_WITH(Protocol::parse("softsync", 4, 5), doctest::Contains("--n 5 must be in [1, 4]"));
    CHECK_THROWS_WITH(Protocol::parse("gossip", 4, 1), doctest::Contains("unknown protocol"));
    CHECK_THROWS_WITH(Protocol::parse("async", 0, 1), doctest::Contains("no learners"));
    // K-sync and K-batch-async: any K in [1, lambda], not only lambda / n.
    CHECK(Protocol::ksync(5, 3).gradients_per_update() == 3);
    CHECK(Protocol::kasync(5, 3).gradients_per_update() == 3);
    CHECK(Protocol::parse("kasync", 5, 1, 0, 4).name() == "4-kasync");
    CHECK(Protocol::parse("ksync", 5, 1, 0, 2).name() == "2-ksync");
    CHECK(Protocol::ksync(5, 3).synchronous());
    CHECK(Protocol::ksync(5, 3).drops_late_gradients());
    CHECK_FALSE(Protocol::kasync(5, 3).synchronous());
    CHECK(Protocol::kasync(5, 3).default_modulation() == LrModulation::Average);
    CHECK(Protocol::kasync(5, 3).with_learners(2).gradients_per_update() == 2);
    CHECK(Protocol::ksync(5, 3).with_learners(4).gradients_per_update() == 3);
    CHECK_THROWS_WITH(Protocol::parse("ksync", 4, 1, 0, 0), doctest::Contains("--protocol ksync needs --k K in [1, 4]"));
    CHECK_THROWS_WITH(Protocol::parse("kasync", 4, 1, 0, 5), doctest::Contains("needs --k K in [1, 4]"));
    CHECK_THROWS_WITH(Protocol::parse("softsync", 4, 1, 0, 2), doctest::Contains("--k is for ksync and kasync"));

    nn::ParamStore p = vector_store(3);
    nn::Solver solver(plain_sgd(0.1), p);
    UpdateRule rule(Protocol::softsync(4, 2), solver, p, 4, {});
    const std::vector<float> ones(p.size(), 1.0f);  // the arena's padding included
    const float* g = ones.data();
    CHECK_FALSE(rule.add_gradient(0, 0, g));
    CHECK(rule.timestamp() == 0);
    CHECK(rule.add_gradient(3, 0, g));
    CHECK(rule.timestamp() == 1);
    CHECK(p.values()[0] == doctest::Approx(-0.1));
    CHECK_THROWS_WITH(rule.add_gradient(1, 2, g), doctest::Contains("ahead of the PS"));
}

TEST_CASE("hardsync sums a timestamp's gradients in learner order, whatever order they arrive in") {
    // 1e8 + 1 - 1e8 is 0 in floats when summed left to right, 1 when the 1 comes last: an
    // arrival-order sum would give either.
    const size_t n = vector_store(1).size();  // the arena's padding included
    const std::vector<std::vector<float>> grads = {std::vector<float>(n, 1e8f), std::vector<float>(n, 1.0f),
                                                   std::vector<float>(n, -1e8f)};
    const float* g[3] = {grads[0].data(), grads[1].data(), grads[2].data()};
    const int orders[][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
    std::vector<float> results;
    for (const auto& order : orders) {
        nn::ParamStore p = vector_store(1);
        nn::Solver solver(plain_sgd(1.0), p);
        UpdateRule rule(Protocol::hardsync(3), solver, p, 3, {});
        for (int k = 0; k < 3; ++k) CHECK(rule.add_gradient(order[k], 0, g[order[k]]) == (k == 2));
        results.push_back(p.values()[0]);
    }
    for (float r : results) CHECK(r == results[0]);
    CHECK(results[0] == doctest::Approx(0.0f));  // (1e8 + 1 - 1e8) / 3, summed in learner order

    nn::ParamStore p = vector_store(1);
    nn::Solver solver(plain_sgd(1.0), p);
    UpdateRule rule(Protocol::hardsync(3), solver, p, 3, {});
    rule.add_gradient(2, 0, g[2]);
    CHECK_THROWS_WITH(rule.add_gradient(2, 0, g[2]), doctest::Contains("a second gradient of timestamp 0 from learner 2"));
}

TEST_CASE("hardsync with backups: the first lambda - B gradients make the update; a late one is counted, never applied") {
    CHECK(Protocol::hardsync(4, 1).gradients_per_update() == 3);
    CHECK(Protocol::hardsync(4, 1).name() == "1-backup-hardsync");
    CHECK(Protocol::parse("hardsync", 4, 1, 3).gradients_per_update() == 1);
    CHECK_THROWS_WITH(Protocol::parse("hardsync", 4, 1, 4), doctest::Contains("--backup 4 must be in [0, 3]"));
    CHECK_THROWS_WITH(Protocol::parse("softsync", 4, 1, 1), doctest::Contains("--backup is for hardsync"));
    // A lost learner uses up a backup: the update keeps its 3 gradients while 3 learners live.
    CHECK(Protocol::hardsync(4, 1).with_learners(3).gradients_per_update() == 3);
    CHECK(Protocol::hardsync(4, 2).with_learners(3).gradients_per_update() == 2);
    CHECK(Protocol::hardsync(4, 1).with_learners(2).gradients_per_update() == 2);

    nn::ParamStore p = vector_store(1);
    nn::Solver solver(plain_sgd(1.0), p);
    UpdateRule rule(Protocol::hardsync(4, 1), solver, p, 4, {});
    const size_t n = p.size();
    std::vector<std::vector<float>> grads;
    for (int l = 0; l < 4; ++l) grads.emplace_back(n, static_cast<float>(l + 1));
    CHECK_FALSE(rule.add_gradient(2, 0, grads[2].data()));
    CHECK_FALSE(rule.add_gradient(0, 0, grads[0].data()));
    CHECK_THROWS_WITH(rule.add_gradient(0, 0, grads[0].data()), doctest::Contains("a second gradient of timestamp 0 from learner 0"));
    CHECK(rule.add_gradient(3, 0, grads[3].data()));  // the third of 4: the update
    CHECK(rule.timestamp() == 1);
    CHECK(p.values()[0] == doctest::Approx(-(3.0 + 1.0 + 4.0) / 3.0));  // averaged over exactly 3
    const float after_update = p.values()[0];
    // Learner 1 is late: its gradient of timestamp 0 is dropped and counted.
    CHECK_FALSE(rule.add_gradient(1, 0, grads[1].data()));
    CHECK(p.values()[0] == after_update);
    CHECK(rule.timestamp() == 1);
    CHECK(rule.applied(1) == 0);
    CHECK(rule.applied(2) == 1);
    CHECK(rule.samples() == 3);
    CHECK(rule.staleness().dropped() == std::vector<int64_t>{0, 1, 0, 0});
    CHECK(rule.staleness().gradients() == 3);  // a dropped gradient has no staleness
    CHECK_THROWS_WITH(rule.add_gradient(1, 2, grads[1].data()), doctest::Contains("ahead of the PS"));
    // The count survives a checkpoint, and the next epoch's window starts at 0.
    UpdateRule again(Protocol::hardsync(4, 1), solver, p, 4, {});
    again.restore_state(nlohmann::json::parse(rule.state().dump()));
    CHECK(again.staleness().dropped_total() == 1);
    double mean;
    int64_t mx, dropped;
    again.staleness().take_epoch(mean, mx, dropped);
    CHECK(dropped == 1);
    again.staleness().take_epoch(mean, mx, dropped);
    CHECK(dropped == 0);
    // Lost learners: the rule goes on, still dropping, over what is left.
    CHECK(rule.goes_on_without_learners());
    rule.set_live_learners(2);
    CHECK(rule.drops_late_gradients());
    CHECK_FALSE(rule.add_gradient(3, 1, grads[3].data()));
    CHECK(rule.add_gradient(1, 1, grads[1].data()));
    CHECK(p.values()[0] == doctest::Approx(after_update - (4.0 + 2.0) / 2.0));
    // K-sync's learners wait for the update: a loss that makes the pending gradients enough
    // must make the update at once.
    UpdateRule k_of_3(Protocol::ksync(3, 3), solver, p, 3, {});
    CHECK_FALSE(k_of_3.add_gradient(0, 0, grads[0].data()));
    CHECK_FALSE(k_of_3.add_gradient(1, 0, grads[1].data()));
    CHECK_FALSE(k_of_3.update_if_complete());
    k_of_3.set_live_learners(2);
    CHECK(k_of_3.update_if_complete());
    CHECK(k_of_3.timestamp() == 1);
    UpdateRule plain(Protocol::hardsync(4), solver, p, 4, {});
    CHECK_FALSE(plain.goes_on_without_learners());
    CHECK_THROWS(plain.set_live_learners(3));
}

TEST_CASE("hardsync with backups sums in arrival order: the same arrivals give the same weights") {
    // 1e8 + 1 - 1e8 is 0 in floats left to right and 1 when the 1 comes last.
    const size_t n = vector_store(1).size();
    const std::vector<std::vector<float>> grads = {std::vector<float>(n, 1e8f), std::vector<float>(n, -1e8f),
                                                   std::vector<float>(n, 1.0f), std::vector<float>(n, 5.0f)};
    auto run = [&](std::vector<int> order) {
        nn::ParamStore p = vector_store(1);
        nn::Solver solver(plain_sgd(1.0), p);
        UpdateRule rule(Protocol::hardsync(4, 1), solver, p, 4, {});
        for (int l : order) rule.add_gradient(l, 0, grads[static_cast<size_t>(l)].data());
        return p.values()[0];
    };
    CHECK(run({0, 2, 1, 3}) == run({0, 2, 1, 3}));
    CHECK(run({0, 2, 1, 3}) == doctest::Approx(0.0f));           // (1e8 + 1) - 1e8: the 1 is lost; 3 dropped
    CHECK(run({0, 1, 2, 3}) == doctest::Approx(-1.0f / 3.0f));  // (1e8 - 1e8) + 1
}

TEST_CASE("a staleness bound: a gradient more than S updates old is refused and counted; none applied is older") {
    nn::ParamStore p = vector_store(1);
    nn::Solver solver(plain_sgd(1.0), p);
    UpdateRuleConfig cfg;
    cfg.max_staleness = 1;
    UpdateRule rule(Protocol::async(3), solver, p, 3, cfg);
    CHECK(rule.drops_gradients());
    const std::vector<float> ones(p.size(), 1.0f);
    CHECK(rule.add_gradient(0, 0, ones.data()));        // sigma 0
    CHECK(rule.add_gradient(1, 0, ones.data()));        // sigma 1: applied
    CHECK_FALSE(rule.add_gradient(2, 0, ones.data()));  // sigma 2: refused
    CHECK(rule.timestamp() == 2);
    CHECK(p.values()[0] == doctest::Approx(-2.0));
    CHECK(rule.staleness().dropped() == std::vector<int64_t>{0, 0, 1});
    CHECK(rule.staleness().max() == 1);
    CHECK(rule.applied(2) == 0);
    CHECK(rule.samples() == 2);
    CHECK_THROWS_WITH(rule.add_gradient(5, 0, ones.data()), doctest::Contains("not one of the 3 learners"));
    // 2-softsync of 4 learners: an update of 2, and a refused gradient does not count toward it.
    UpdateRule soft(Protocol::softsync(4, 2), solver, p, 4, cfg);
    CHECK_FALSE(soft.add_gradient(0, 0, ones.data()));
    CHECK(soft.add_gradient(1, 0, ones.data()));
    CHECK_FALSE(soft.add_gradient(2, 0, ones.data()));  // sigma 1: pending
    CHECK(soft.add_gradient(3, 0, ones.data()));        // the update
    CHECK_FALSE(soft.add_gradient(0, 0, ones.data()));  // sigma 2: refused, nothing pending
    CHECK(soft.staleness().dropped_total() == 1);
    CHECK_FALSE(soft.add_gradient(1, 1, ones.data()));
    CHECK(soft.add_gradient(2, 2, ones.data()));
    CHECK(soft.timestamp() == 3);
    UpdateRule unbounded(Protocol::async(3), solver, p, 3, {});
    CHECK_FALSE(unbounded.drops_gradients());
}

TEST_CASE("timestamps and staleness: sigma = PS timestamp - gradient timestamp, per learner and overall") {
    nn::ParamStore p = vector_store(2);
    nn::Solver solver(plain_sgd(0.0), p);
    UpdateRule rule(Protocol::async(3), solver, p, 3, {});
    const std::vector<float> zeros(p.size(), 0.0f);
    const float* g = zeros.data();
    rule.add_gradient(0, 0, g);  // sigma 0, ts -> 1
    rule.add_gradient(1, 0, g);  // sigma 1, ts -> 2
    rule.add_gradient(2, 0, g);  // sigma 2, ts -> 3
    rule.add_gradient(1, 2, g);  // sigma 1, ts -> 4
    const StalenessStats& st = rule.staleness();
    CHECK(st.histogram() == std::vector<int64_t>{1, 2, 1});
    CHECK(st.histogram(1) == std::vector<int64_t>{0, 2});
    CHECK(st.histogram(2) == std::vector<int64_t>{0, 0, 1});
    CHECK(st.mean() == doctest::Approx(1.0));
    CHECK(st.max() == 2);
    CHECK(st.clock_offsets().size() == 5);  // one vector clock per update
    CHECK(st.clock_entries() == std::vector<int64_t>{0, 0, 0, 2});
    double mean;
    int64_t mx, dropped;
    rudra::dist::StalenessStats copy = st;
    copy.take_epoch(mean, mx, dropped);
    CHECK(dropped == 0);
    CHECK(mean == doctest::Approx(1.0));
    CHECK(mx == 2);

    UpdateRule hard(Protocol::hardsync(2), solver, p, 2, {});
    hard.add_gradient(0, 0, g);
    hard.add_gradient(1, 0, g);
    CHECK_THROWS_WITH(hard.add_gradient(0, 0, g), doctest::Contains("hardsync: gradient of timestamp 0 while the PS is at 1"));
}

TEST_CASE("learning-rate modulation: none, alpha0/<sigma> per update, alpha0/max(sigma,1) per gradient") {
    const std::vector<float> ones_buffer(vector_store(1).size(), 1.0f);  // the arena's padding included
    const float* ones = ones_buffer.data();
    auto run = [&](LrModulation m) {
        nn::ParamStore p = vector_store(1);
        nn::Solver solver(plain_sgd(1.0), p);
        const Protocol proto = Protocol::softsync(2, 1);  // c = 2
        UpdateRuleConfig cfg;
        cfg.modulation = m;
        UpdateRule rule(proto, solver, p, 2, cfg);
        // Four updates of two gradients at ts 0 to reach ts 2; then one of sigma 0 and sigma 4.
        for (int i = 0; i < 2; ++i) {
            rule.add_gradient(0, rule.timestamp(), ones);
            rule.add_gradient(1, rule.timestamp(), ones);
        }
        const float before = p.values()[0];
        rule.add_gradient(0, 2, ones);  // sigma 0
        rule.add_gradient(1, 0, ones);  // sigma 2
        return before - p.values()[0];
    };
    CHECK(run(LrModulation::None) == doctest::Approx(1.0));
    CHECK(run(LrModulation::Average) == doctest::Approx(1.0));  // <sigma> = 1
    CHECK(run(LrModulation::PerGradient) == doctest::Approx((1.0 + 0.5) / 2));
    // With every gradient 3 stale, average modulation divides the rate by 3.
    nn::ParamStore p = vector_store(1);
    nn::Solver solver(plain_sgd(1.0), p);
    UpdateRuleConfig cfg;
    cfg.modulation = LrModulation::Average;
    cfg.base_scale = 2.0f;
    UpdateRule rule(Protocol::async(), solver, p, 1, cfg);
    for (int i = 0; i < 3; ++i) rule.add_gradient(0, rule.timestamp(), ones);
    const float before = p.values()[0];
    rule.add_gradient(0, 0, ones);
    CHECK(before - p.values()[0] == doctest::Approx(2.0 / 3.0));
    CHECK(rule.last_lr_scale() == doctest::Approx(2.0 / 3.0));
}

namespace {

struct SystemResult {
    std::vector<float> weights;
    PsResult ps;
    StalenessStats staleness{0};
    std::vector<std::string> epoch_lines;  // every line but the last, "traffic" one
    nlohmann::ordered_json traffic;
    std::vector<LearnerSummary> learners;
    int64_t finished_at_update = -1;  // when the PS's `finished` hook ran
};

// PS (rank 0), statistics server (rank 1) and `lambda` learners (ranks 2..) as threads on the
// in-process hub. make_work(l) supplies learner l's engine.
SystemResult run_system(const Protocol& proto, int lambda, bool overlap, nn::ParamStore& params, nn::Solver& solver,
                        UpdateRuleConfig cfg, int64_t samples_per_epoch, int epochs,
                        const std::function<LearnerWork(int)>& make_work, int dead = 0, double timeout_s = 15.0) {
    InProcessHub hub(lambda + 2);
    SystemResult out;
    UpdateRule rule(proto, solver, params, lambda, cfg);
    std::vector<std::thread> threads;
    std::vector<LearnerSummary> summaries(lambda);
    // The last `dead` learners never start: they send nothing, not even heartbeats.
    for (int l = 0; l < lambda - dead; ++l)
        threads.emplace_back([&, l] {
            InProcessTransport t(hub, 2 + l);
            Heartbeat hb(t, beats({0}, timeout_s));
            LearnerConfig lc;
            lc.overlap = overlap;
            lc.synchronous = proto.synchronous();
            lc.wait_for_pull = cfg.max_staleness >= 0;
            lc.report_every = 3;
            summaries[l] = run_learner(t, lc, make_work(l));
        });
    threads.emplace_back([&] {
        InProcessTransport t(hub, 1);
        Heartbeat hb(t, beats({0}, timeout_s));
        StatsConfig sc;
        sc.heartbeat = &hb;
        sc.learners = lambda;
        sc.param_floats = params.size();
        sc.protocol = proto.name();
        run_stats_server(
            t, sc, [](const float*) { return TestResult{0.5, 1.0, -1.0, {}}; },
            [&](const nlohmann::ordered_json& line) {
                if (line.value("event", "") == "traffic") out.traffic = line;
                else out.epoch_lines.push_back(line.dump());
            });
    });
    InProcessTransport t(hub, 0);
    PsConfig pc;
    for (int l = 0; l < lambda; ++l) pc.learner_ranks.push_back(2 + l);
    pc.samples_per_epoch = samples_per_epoch;
    pc.epochs = epochs;
    pc.peer_timeout_s = timeout_s;
    std::vector<int> others;
    for (int r = 1; r < lambda + 2; ++r) others.push_back(r);
    Heartbeat hb(t, beats(others, timeout_s));
    PsHooks hooks;
    hooks.heartbeat = &hb;
    hooks.finished = [&] { out.finished_at_update = rule.timestamp(); };
    ParameterServer ps(t, rule, params, pc, hooks);
    out.ps = ps.run();
    for (auto& th : threads) th.join();
    out.weights.assign(params.values(), params.values() + params.size());
    out.staleness = rule.staleness();
    out.learners = summaries;
    return out;
}

// The gradients dropped, as the epoch lines logged them.
int64_t dropped_logged(const SystemResult& r) {
    int64_t logged = 0;
    for (const auto& line : r.epoch_lines) {
        const auto j = nlohmann::json::parse(line);
        if (j.value("event", "") == "epoch") logged += j.at("dropped").get<int64_t>();
    }
    return logged;
}

}  // namespace

TEST_CASE("whole system on the in-process transport: every protocol and mode converges and ends cleanly") {
    struct Case {
        std::string protocol;
        int n;
        bool overlap;
        int k = 0;
    };
    for (const Case& c : {Case{"hardsync", 1, false}, Case{"hardsync", 1, true}, Case{"softsync", 1, false},
                          Case{"softsync", 2, true}, Case{"softsync", 4, false}, Case{"async", 1, true},
                          Case{"kasync", 1, false, 3}, Case{"ksync", 1, true, 4}}) {
        CAPTURE(c.protocol);
        CAPTURE(c.n);
        CAPTURE(c.overlap);
        const int lambda = 4;
        const Protocol proto = Protocol::parse(c.protocol, lambda, c.n, 0, c.k);
        nn::ParamStore params = vector_store(5);
        nn::Solver solver(plain_sgd(0.05), params);
        UpdateRuleConfig cfg;
        cfg.batch = 1;
        cfg.reference_batch = 1;
        std::vector<std::unique_ptr<Quadratic>> models;
        // 2 ms per gradient: the PS keeps up with 4 learners even under ThreadSanitizer on 2
        // loaded cores. At 300 us the queue grew there, async saw staleness 44-58, and at rate
        // 0.05 the toy did not converge.
        for (int l = 0; l < lambda; ++l)
            models.push_back(std::make_unique<Quadratic>(params.size(), std::chrono::milliseconds(2)));
        auto fut = std::async(std::launch::async, [&] {
            return run_system(proto, lambda, c.overlap, params, solver, cfg, 100, 3,
                              [&](int l) { return models[l]->work(); });
        });
        REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);  // a hang fails
        SystemResult r = fut.get();
        CAPTURE(r.ps.updates);
        CAPTURE(r.ps.dropped_gradients);
        CAPTURE(r.ps.lost_ranks.size());
        CAPTURE(r.staleness.mean());
        CHECK(r.epoch_lines.size() == 3);
        CHECK(r.epoch_lines.back().find("\"epoch\":3") != std::string::npos);
        CHECK(r.ps.samples >= 300);
        CHECK(r.ps.updates == r.ps.samples / proto.gradients_per_update());
        CHECK(r.staleness.gradients() == r.ps.samples);
        int64_t total = 0;
        for (int64_t v : r.staleness.histogram()) total += v;
        CHECK(total == r.staleness.gradients());
        if (proto.synchronous()) CHECK(r.staleness.max() == 0);
        for (float w : std::vector<float>(r.weights.begin(), r.weights.begin() + 5)) CHECK(w == doctest::Approx(3.0).epsilon(0.05));
        for (const auto& s : r.learners) CHECK(s.minibatches > 0);
        // Traffic: every rank's, in a last line; the PS took every gradient as one message of the
        // whole arena, and answered pulls with weights or "nothing newer"; rank 0's with each epoch.
        const auto& ranks = r.traffic.at("ranks");
        REQUIRE(ranks.size() == size_t(lambda + 2));
        CHECK(ranks[0].at("role") == "parameter server");
        CHECK(ranks[1].at("role") == "statistics server");
        CHECK(ranks[2].at("role") == "learner");
        const int64_t gradients = r.staleness.gradients();
        CHECK(ranks[0].at("received_messages").get<int64_t>() >= gradients);
        CHECK(ranks[0].at("received_bytes").get<int64_t>() >= gradients * int64_t(params.size() * sizeof(float)));
        // Every reply is a message, and each with weights carries the whole arena (how many pulls
        // found newer weights depends on timing).
        const int64_t with = ranks[0].at("weight_replies").get<int64_t>();
        const int64_t without = ranks[0].at("empty_replies").get<int64_t>();
        CHECK(with >= 1);
        CHECK(ranks[0].at("sent_messages").get<int64_t>() >= with + without);
        CHECK(ranks[0].at("sent_bytes").get<int64_t>() >= with * int64_t(params.size() * sizeof(float)));
        int64_t learner_messages = 0;
        for (int l = 0; l < lambda; ++l) learner_messages += ranks[2 + l].at("sent_messages").get<int64_t>();
        CHECK(learner_messages >= gradients);  // each learner's last report follows its last gradient
        CHECK(ranks[1].at("received_messages").get<int64_t>() >= 3);
        CHECK(r.epoch_lines.back().find("\"rank0_traffic\":{\"sent_messages\":") != std::string::npos);
    }
}

TEST_CASE("a lost learner: the asynchronous protocols, hardsync with a backup and K-sync go on without it, hardsync "
          "stops; the final files come first") {
    struct Case {
        std::string protocol;
        int n, backup, k = 0;
    };
    for (const Case& c : {Case{"softsync", 1, 0}, Case{"softsync", 3, 0}, Case{"async", 1, 0}, Case{"hardsync", 1, 0},
                          Case{"hardsync", 1, 1}, Case{"ksync", 1, 0, 3}, Case{"kasync", 1, 0, 2}}) {
        CAPTURE(c.protocol);
        CAPTURE(c.n);
        CAPTURE(c.backup);
        CAPTURE(c.k);
        const int lambda = 3;
        const Protocol proto = Protocol::parse(c.protocol, lambda, c.n, c.backup, c.k);
        nn::ParamStore params = vector_store(5);
        nn::Solver solver(plain_sgd(0.05), params);
        UpdateRuleConfig cfg;
        std::vector<std::unique_ptr<Quadratic>> models;
        for (int l = 0; l < lambda; ++l) models.push_back(std::make_unique<Quadratic>(params.size()));
        auto fut = std::async(std::launch::async, [&] {
            return run_system(proto, lambda, false, params, solver, cfg, 100, 3,
                              [&](int l) { return models[l]->work(); }, /*dead=*/1, /*timeout_s=*/0.5);
        });
        REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);  // a hang fails
        SystemResult r = fut.get();
        REQUIRE(r.ps.lost_ranks == std::vector<int>{4});
        int lost_lines = 0;
        for (const auto& line : r.epoch_lines)
            if (line.find("\"event\":\"learner_lost\",\"rank\":4") != std::string::npos) ++lost_lines;
        CHECK(lost_lines == 1);
        CHECK(r.ps.stats_done);
        if (proto.synchronous() && !proto.drops_late_gradients()) {
            CHECK(r.ps.end == PsResult::End::LearnerLost);
            CHECK(r.ps.updates == 0);  // no update is complete without learner 2
            CHECK(r.epoch_lines.back().find("\"event\":\"stopped\"") != std::string::npos);
        } else {
            CHECK(r.ps.end == PsResult::End::Finished);
            CHECK(r.ps.samples >= 300);
            CHECK(r.finished_at_update >= 0);
            CHECK(r.finished_at_update <= r.ps.updates);
            // The lost learner may be found before or after the last epoch: it is not waited for.
            CHECK(std::count_if(r.epoch_lines.begin(), r.epoch_lines.end(), [](const std::string& line) {
                      return line.find("\"event\":\"epoch\"") != std::string::npos;
                  }) == 3);
            CHECK(r.staleness.histogram(2).empty());  // nothing from the lost one
            for (float w : std::vector<float>(r.weights.begin(), r.weights.begin() + 5))
                CHECK(w == doctest::Approx(3.0).epsilon(0.05));
        }
    }
}

TEST_CASE("hardsync with a backup, and 3-sync of 4, with a slow learner: no update waits for it; its late gradients "
          "are dropped and logged") {
  for (const Protocol& proto : {Protocol::hardsync(4, 1), Protocol::ksync(4, 3)}) {
    CAPTURE(proto.name());
    const int lambda = 4;
    nn::ParamStore params = vector_store(5);
    nn::Solver solver(plain_sgd(0.05), params);
    std::vector<std::unique_ptr<Quadratic>> models;
    for (int l = 0; l < lambda; ++l)
        models.push_back(std::make_unique<Quadratic>(params.size(), std::chrono::milliseconds(l == 3 ? 20 : 2)));
    auto fut = std::async(std::launch::async, [&] {
        return run_system(proto, lambda, false, params, solver, {}, 90, 3, [&](int l) { return models[l]->work(); });
    });
    REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);  // a hang fails
    SystemResult r = fut.get();
    CHECK(r.ps.end == PsResult::End::Finished);
    CHECK(r.ps.updates == r.ps.samples / 3);  // each update averaged exactly lambda - 1 gradients
    CHECK(r.staleness.gradients() == r.ps.samples);
    CHECK(r.staleness.max() == 0);  // what was applied was computed on the newest weights
    const std::vector<int64_t>& dropped = r.staleness.dropped();
    CAPTURE(dropped);
    CHECK(dropped[3] > 0);  // the slow one is late for most updates
    CHECK(r.learners[3].minibatches < r.learners[0].minibatches);
    CHECK(dropped_logged(r) == r.staleness.dropped_total());
    for (float w : std::vector<float>(r.weights.begin(), r.weights.begin() + 5)) CHECK(w == doctest::Approx(3.0).epsilon(0.05));
  }
}

TEST_CASE("async with a staleness bound and a slow learner: no applied gradient is older than the bound") {
    const int lambda = 4;
    const int64_t bound = 2;
    nn::ParamStore params = vector_store(5);
    nn::Solver solver(plain_sgd(0.05), params);
    UpdateRuleConfig cfg;
    cfg.max_staleness = bound;
    std::vector<std::unique_ptr<Quadratic>> models;
    for (int l = 0; l < lambda; ++l)
        models.push_back(std::make_unique<Quadratic>(params.size(), std::chrono::milliseconds(l == 3 ? 20 : 2)));
    auto fut = std::async(std::launch::async, [&] {
        return run_system(Protocol::async(lambda), lambda, true, params, solver, cfg, 100, 3,
                          [&](int l) { return models[l]->work(); });
    });
    REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);  // a hang fails
    SystemResult r = fut.get();
    CAPTURE(r.staleness.dropped());
    CHECK(r.ps.end == PsResult::End::Finished);
    CHECK(r.staleness.max() <= bound);
    CHECK(r.staleness.histogram().size() <= static_cast<size_t>(bound + 1));
    CHECK(r.staleness.dropped()[3] > 0);  // the slow learner's gradients are too old
    CHECK(r.staleness.gradients() == r.ps.samples);
    CHECK(dropped_logged(r) == r.staleness.dropped_total());
    for (float w : std::vector<float>(r.weights.begin(), r.weights.begin() + 5)) CHECK(w == doctest::Approx(3.0).epsilon(0.05));
}

TEST_CASE("n-softsync over fewer live learners averages floor(live / n) gradients") {
    CHECK(Protocol::softsync(4, 1).with_learners(3).gradients_per_update() == 3);
    CHECK(Protocol::softsync(4, 2).with_learners(3).gradients_per_update() == 1);
    CHECK(Protocol::softsync(4, 4).with_learners(2).gradients_per_update() == 1);
    CHECK(Protocol::softsync(4, 4).with_learners(2).n() == 2);
    nn::ParamStore params = vector_store(3);
    nn::Solver solver(plain_sgd(1.0), params);
    UpdateRule rule(Protocol::softsync(4, 1), solver, params, 4, UpdateRuleConfig{});
    const std::vector<float> ones(params.size(), 1.0f);
    CHECK_FALSE(rule.add_gradient(0, 0, ones.data()));
    CHECK_FALSE(rule.add_gradient(1, 0, ones.data()));
    rule.set_live_learners(2);  // two pending already make an update with the next check
    CHECK(rule.add_gradient(2, 0, ones.data()));
    CHECK(rule.applied(0) == 1);
    CHECK(rule.applied(3) == 0);
    CHECK_FALSE(rule.add_gradient(0, 1, ones.data()));
    CHECK(rule.add_gradient(1, 1, ones.data()));
}

TEST_CASE("schedule record: every call into the update rule in order, each gradient with its learner's position; "
          "written whole and read back the same") {
    nn::ParamStore params = vector_store(2);
    nn::Solver solver(plain_sgd(1.0), params);
    UpdateRule rule(Protocol::softsync(3, 1), solver, params, 3, UpdateRuleConfig{});
    ScheduleRecord record(3);
    rule.record_into(&record);
    const std::vector<float> ones(params.size(), 1.0f);
    rule.add_gradient(2, 0, ones.data());
    rule.add_gradient(0, 0, ones.data());
    rule.set_live_learners(2);
    CHECK(rule.update_if_complete());
    rule.add_gradient(2, 1, ones.data());
    rule.add_gradient(2, 0, ones.data());
    using K = ScheduleEvent::Kind;
    const std::vector<ScheduleEvent>& e = record.events();
    REQUIRE(e.size() == 6);
    CHECK((e[0].kind == K::Gradient && e[0].learner == 2 && e[0].position == 0 && e[0].version == 0));
    CHECK((e[1].kind == K::Gradient && e[1].learner == 0 && e[1].position == 0));
    CHECK((e[2].kind == K::Live && e[2].learner == 2));
    CHECK(e[3].kind == K::Check);
    CHECK((e[4].learner == 2 && e[4].position == 1 && e[4].version == 1));
    CHECK((e[5].learner == 2 && e[5].position == 2 && e[5].version == 0));
    CHECK(record.gradients() == 4);

    const std::string path = "/tmp/rudra-test-schedule-" + std::to_string(::getpid()) + ".txt";
    record.write(path, {{"threads", 2}});
    const ScheduleRecord::Read back = ScheduleRecord::read(path);
    std::remove(path.c_str());
    CHECK(back.header.at("threads") == 2);
    CHECK(back.header.at("events") == 6);
    REQUIRE(back.record.events().size() == e.size());
    for (size_t i = 0; i < e.size(); ++i) {
        const ScheduleEvent& a = back.record.events()[i];
        CHECK((a.kind == e[i].kind && a.learner == e[i].learner && a.position == e[i].position &&
               a.version == e[i].version));
    }
    // A relayed sum has its own order of addition: a recorded rule refuses it.
    CHECK_THROWS_AS(rule.add_bundle({{0, 1}}, ones.data()), std::logic_error);
}

TEST_CASE("update rule state: a restored rule goes on exactly as the original") {
    auto run = [](bool restore_midway) {
        nn::ParamStore params = vector_store(4);
        nn::Solver solver(plain_sgd(0.1), params);
        UpdateRule rule(Protocol::softsync(3, 1), solver, params, 3, UpdateRuleConfig{});
        std::vector<float> g(params.size());
        for (int i = 0; i < 30; ++i) {
            if (restore_midway && i == 15) {
                const auto state = rule.state();
                UpdateRule again(Protocol::softsync(3, 1), solver, params, 3, UpdateRuleConfig{});
                again.restore_state(nlohmann::json::parse(state.dump()));
                for (int j = i; j < 30; ++j) {
                    for (size_t k = 0; k < g.size(); ++k) g[k] = 0.01f * static_cast<float>(j + k);
                    again.add_gradient(j % 3, std::max<int64_t>(0, again.timestamp() - j % 2), g.data());
                }
                return std::make_pair(again.staleness().to_json("x").dump(), again.timestamp());
            }
            for (size_t k = 0; k < g.size(); ++k) g[k] = 0.01f * static_cast<float>(i + k);
            rule.add_gradient(i % 3, std::max<int64_t>(0, rule.timestamp() - i % 2), g.data());
        }
        return std::make_pair(rule.staleness().to_json("x").dump(), rule.timestamp());
    };
    CHECK(run(false) == run(true));
}

TEST_CASE("hardsync: lambda learners of mini-batch mu equal one learner of mini-batch lambda*mu on the same samples; "
          "K-sync, when the same K learners are first every time, one learner of K*mu") {
  // K-sync: 2 of 3, learner 2 so slow that its first gradient arrives after the run's last update.
  for (const int k : {3, 2})
  for (const bool swap : {false, true}) {  // learners take pulled weights by a copy, or by the pointer swap
    CAPTURE(k);
    CAPTURE(swap);
    const std::string text = test::kSmallConvNet;
    const int lambda = 3, mu = 4, updates = 6;
    data::Dataset d = test::small_dataset(50);
    data::Transform tf;
    tf.scale = 1.0f / 255;
    nn::NetSpec spec = nn::parse_net_spec(text, "<hardsync>");
    nn::SolverSpec sgd = plain_sgd(0.1, 0.9);
    sgd.weight_decay = 1e-3;
    auto net_for = [&](int batch) {
        nn::NetOptions o;
        o.batch = batch;
        o.data_chw = {1, 6, 6};
        return std::make_unique<nn::Net>(spec, o);
    };

    // Distributed: learner l samples with seed 100 + l.
    auto ps_net = net_for(mu);
    ps_net->params().fill(9);
    const std::vector<float> initial(ps_net->params().values(), ps_net->params().values() + ps_net->params().size());
    nn::Solver ps_solver(sgd, ps_net->params());
    std::vector<std::unique_ptr<nn::Net>> nets;
    std::vector<std::unique_ptr<data::Prefetcher>> streams;
    for (int l = 0; l < lambda; ++l) {
        nets.push_back(net_for(mu));
        streams.push_back(std::make_unique<data::Prefetcher>(d, tf, mu, 100 + l, 0));
    }
    auto work = [&](int l) {
        LearnerWork w;
        nn::Net& net = *nets[l];
        w.param_floats = net.params().size();
        w.load_weights = [&net](const float* p) { std::copy(p, p + net.params().size(), net.params().values()); };
        if (swap) w.use_weights = [&net](float* p) { net.bind_values(p); };
        w.compute = [&net, &streams, l, k] {
            if (l >= k) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            const data::Batch& b = streams[l]->next();
            std::copy(b.data.begin(), b.data.end(), net.input_data().data);
            std::copy(b.labels.begin(), b.labels.end(), net.input_label()->data);
            net.params().zero_grads();
            const double loss = net.forward();
            net.backward();
            return loss;
        };
        w.gradients = net.params().grads();
        return w;
    };
    const Protocol hs = k == lambda ? Protocol::hardsync(lambda) : Protocol::ksync(lambda, k);
    UpdateRuleConfig cfg;
    cfg.batch = mu;
    cfg.reference_batch = k * mu;
    cfg.base_scale = std::sqrt(float(k * mu) / cfg.reference_batch);  // = 1
    SystemResult r = run_system(hs, lambda, false, ps_net->params(), ps_solver, cfg, k * mu * updates, 1, work);
    REQUIRE(r.ps.updates == updates);

    // One learner of mini-batch k*mu over the same samples: update u takes each first learner's u-th batch.
    auto big = net_for(k * mu);
    std::copy(initial.begin(), initial.end(), big->params().values());
    nn::Solver big_solver(sgd, big->params());
    std::vector<std::unique_ptr<data::Prefetcher>> replay;
    for (int l = 0; l < lambda; ++l) replay.push_back(std::make_unique<data::Prefetcher>(d, tf, mu, 100 + l, 0));
    const int64_t per = 36;
    for (int u = 0; u < updates; ++u) {
        for (int l = 0; l < k; ++l) {
            const data::Batch& b = replay[l]->next();
            std::copy(b.data.begin(), b.data.end(), big->input_data().data + l * mu * per);
            std::copy(b.labels.begin(), b.labels.end(), big->input_label()->data + l * mu);
        }
        big->params().zero_grads();
        big->forward();
        big->backward();
        big_solver.apply(big->params().grads(), u);
    }
    double max_diff = 0, max_change = 0;
    for (size_t i = 0; i < initial.size(); ++i) {
        max_diff = std::max(max_diff, double(std::fabs(r.weights[i] - big->params().values()[i])));
        max_change = std::max(max_change, double(std::fabs(initial[i] - big->params().values()[i])));
    }
    CAPTURE(max_diff);
    CAPTURE(max_change);
    CHECK(max_change > 1e-2);       // the runs did move the weights
    CHECK(max_diff < 1e-5);         // and agree up to reassociation
    CHECK(r.staleness.histogram(2).size() == (k == lambda ? 1u : 0u));  // the slow learner's gradients: none applied
  }
}

TEST_CASE("pointer swap: a net computes on the buffer it is bound to, whole, and on nothing else") {
    nn::NetOptions o;
    o.batch = 4;
    o.data_chw = {1, 6, 6};
    nn::Net net(nn::parse_net_spec(test::kSmallConvNet, "<swap>"), o);
    const size_t n = net.params().size();
    for (size_t i = 0; i < 4 * 36; ++i) net.input_data().data[i] = float(i % 7) / 7;
    for (int i = 0; i < 4; ++i) net.input_label()->data[i] = float(i % 3);
    // Two buffers of distinct constant weights; the net's own arena holds a third value.
    std::vector<float> a(n, 0.01f), b(n, -0.02f);
    std::fill(net.params().values(), net.params().values() + n, 0.5f);
    auto scores = [&] {
        net.forward();
        const nn::Blob& s = net.blob("ip");
        return std::vector<float>(s.data, s.data + s.count());
    };
    const std::vector<float> own = scores();
    net.bind_values(a.data());
    CHECK(net.bound_values() == a.data());
    const std::vector<float> on_a = scores();
    net.bind_values(b.data());
    const std::vector<float> on_b = scores();
    // The same as copying each buffer into the net's arena: nothing of the other buffer or of the
    // arena is read.
    net.bind_values(nullptr);
    CHECK(net.bound_values() == net.params().values());
    CHECK(scores() == own);
    std::copy(a.begin(), a.end(), net.params().values());
    CHECK(scores() == on_a);
    std::copy(b.begin(), b.end(), net.params().values());
    CHECK(scores() == on_b);
    CHECK(on_a != on_b);
    // Gradients stay in the arena's gradient buffer whatever the binding.
    net.bind_values(a.data());
    net.params().zero_grads();
    net.backward();
    CHECK(std::any_of(net.params().grads(), net.params().grads() + n, [](float g) { return g != 0.0f; }));
    CHECK(std::all_of(a.begin(), a.end(), [](float v) { return v == 0.01f; }));  // read only
}

TEST_CASE("pointer swap in the overlap mode: the weights a gradient is computed on never change under it") {
    const int lambda = 2;
    const Protocol proto = Protocol::async(lambda);
    nn::ParamStore params = vector_store(4096);
    nn::Solver solver(plain_sgd(0.01), params);
    std::vector<std::set<const float*>> buffers(lambda);
    std::atomic<int> changed{0}, copies{0};
    std::vector<const float*> bound(lambda, nullptr);
    auto work = [&](int l) {
        LearnerWork w;
        w.param_floats = params.size();
        w.load_weights = [&](const float*) { ++copies; };
        w.use_weights = [&, l](float* p) {
            bound[l] = p;
            buffers[l].insert(p);
        };
        auto grad = std::make_shared<std::vector<float>>(params.size(), 1.0f);
        w.gradients = grad->data();
        w.compute = [&, l, grad] {
            if (!bound[l]) return 0.0;
            const std::vector<float> before(bound[l], bound[l] + params.size());
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // pulls run meanwhile
            if (!std::equal(before.begin(), before.end(), bound[l])) ++changed;
            return 0.0;
        };
        return w;
    };
    auto fut = std::async(std::launch::async, [&] {
        return run_system(proto, lambda, /*overlap=*/true, params, solver, {}, 200, 1, work);
    });
    REQUIRE(fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready);  // a hang fails
    const SystemResult r = fut.get();
    CHECK(r.ps.updates >= 100);
    CHECK(changed.load() == 0);
    CHECK(copies.load() == 0);
    for (int l = 0; l < lambda; ++l) CHECK(buffers[l].size() == 2);  // two buffers, swapped
}

namespace {

// A transport whose sends of one tag take `delay` before they go: a slow link for one kind of
// message.
class SlowTagTransport final : public Transport {
public:
    SlowTagTransport(Transport& inner, int tag, std::chrono::milliseconds delay)
        : inner_(inner), tag_(tag), delay_(delay) {}
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    bool send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting& keep_waiting) override {
        if (tag == tag_) std::this_thread::sleep_for(delay_);
        return inner_.send_while(dest, tag, data, bytes, keep_waiting);
    }
    std::optional<Envelope> recv_while(int source, int tag, std::vector<char>& buf, const KeepWaiting& keep_waiting,
                                       const std::function<bool(int)>& sender_alive) override {
        return inner_.recv_while(source, tag, buf, keep_waiting, sender_alive);
    }
    bool barrier_while(const KeepWaiting& keep_waiting) override { return inner_.barrier_while(keep_waiting); }

private:
    Transport& inner_;
    int tag_;
    std::chrono::milliseconds delay_;
};

// The tags of the weight requests and gradients one learner (rank 1, its gradients' sends slowed
// by 20 ms) sends a stand-in PS (rank 0) over `gradients` gradients, in the order they arrive.
// The stand-in applies each gradient as an update and answers each request with the newest
// weights, or says stop once it has them all.
std::vector<int> learner_message_order(bool overlap, int gradients) {
    InProcessHub hub(2);
    std::vector<float> grad(4, 1.0f);
    auto learner = std::async(std::launch::async, [&] {
        InProcessTransport inner(hub, 1);
        SlowTagTransport t(inner, kGradient, std::chrono::milliseconds(20));
        LearnerWork w;
        w.param_floats = grad.size();
        w.load_weights = [](const float*) {};
        w.gradients = grad.data();
        w.compute = [] { return 0.0; };
        LearnerConfig lc;
        lc.stats_rank = 0;  // its loss reports come to the stand-in, which ignores them
        lc.report_every = 1000;
        lc.overlap = overlap;
        return run_learner(t, lc, w);
    });
    InProcessTransport t(hub, 0);
    std::vector<int> order;
    std::vector<char> in, out;
    const std::vector<float> weights(grad.size(), 0.5f);
    int64_t ts = 0, received = 0;
    for (;;) {
        const Envelope e = t.recv(1, kAnyTag, in);
        if (e.tag == kBye) break;
        if (e.tag == kGradient) {
            order.push_back(kGradient);
            ++received;
            ++ts;
        } else if (e.tag == kWeightsRequest) {
            order.push_back(kWeightsRequest);
            const auto req = unpack_header<WeightsRequest>(in);
            const bool stop = received >= gradients, newer = ts > req.have_ts;
            pack(out, WeightsReply{ts, newer && !stop ? 1 : 0, stop ? 1 : 0}, newer && !stop ? weights.data() : nullptr,
                 newer && !stop ? weights.size() : 0);
            t.send(1, kWeightsReply, out.data(), out.size());
        }
    }
    REQUIRE(learner.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    learner.get();
    return order;
}

}  // namespace

TEST_CASE("Rudra-base pushes, then pulls: each weight request reaches the PS after the learner's previous gradient") {
    const std::vector<int> base = learner_message_order(/*overlap=*/false, 6);
    // Request, then per gradient: the gradient, then the next request.
    std::vector<int> expected{kWeightsRequest};
    for (int g = 0; g < 6; ++g) {
        expected.push_back(kGradient);
        expected.push_back(kWeightsRequest);
    }
    CHECK(base == expected);
    // The overlap mode asks for the next weights while the gradient is still on its way: some
    // request arrives before the previous gradient (this is what the base mode must not do).
    const std::vector<int> overlap = learner_message_order(/*overlap=*/true, 6);
    std::string seen;
    for (int tag : overlap) seen += tag == kGradient ? 'g' : 'r';
    CAPTURE(seen);
    bool overtaken = false;
    for (size_t i = 1; i < overlap.size(); ++i)
        overtaken |= overlap[i] == kWeightsRequest && overlap[i - 1] == kWeightsRequest;
    CHECK(overtaken);
}

TEST_CASE("barrier: no rank passes before all have arrived; the wait policy follows the load") {
    InProcessHub hub(4);
    std::atomic<int> arrived{0};
    std::atomic<int> early{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < 4; ++r)
        ranks.emplace_back([&, r] {
            InProcessTransport t(hub, r);
            std::this_thread::sleep_for(std::chrono::milliseconds(10 * r));
            ++arrived;
            t.barrier();
            if (arrived.load() != 4) ++early;
            t.barrier();  // a second round works too
        });
    for (auto& th : ranks) th.join();
    CHECK(early.load() == 0);
    CHECK(WaitPolicy::for_load(32, 1, 2).sleep_us == 2000);
    CHECK(WaitPolicy::for_load(2, 1, 16).sleep_us == 20);
    CHECK(WaitPolicy::for_load(4, 4, 16).sleep_us == 20);
    CHECK(WaitPolicy::for_load(5, 4, 16).sleep_us == 2000);
}

TEST_CASE("a message on its way is tested again and again after each sleep, not once per sleep") {
    // MPICH moves a large message in pieces, one per test: one test per sleep caps its speed.
    WaitPolicy slow;
    slow.spin = 0;
    slow.sleep_us = 200000;
    slow.transfer_sleep_us = 200000;
    const WaitPolicy transfer = slow.for_transfer();
    REQUIRE(transfer.burst_us > 0);
    int calls = 0;
    const auto start = std::chrono::steady_clock::now();
    // 50 tests: 49 sleeps of 0.2 s without the bursts, well within the first burst with them.
    transfer.wait([&] { return ++calls == 50; });
    CHECK(calls == 50);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    CHECK(slow.burst_us == 0);  // other waits sleep between tests
}

namespace {

// A transport on which sends to `dead` never complete, as MPICH's to a killed rank: each waits
// until its time limit and gives up.
class DeadPeerTransport final : public Transport {
public:
    DeadPeerTransport(InProcessHub& hub, int rank, int dead) : inner_(hub, rank), dead_(dead) {}
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    bool send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting& keep_waiting) override {
        if (dest != dead_) return inner_.send_while(dest, tag, data, bytes, keep_waiting);
        while (!keep_waiting || keep_waiting()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return false;
    }
    std::optional<Envelope> recv_while(int source, int tag, std::vector<char>& buf, const KeepWaiting& keep_waiting,
                                       const std::function<bool(int)>& sender_alive) override {
        return inner_.recv_while(source, tag, buf, keep_waiting, sender_alive);
    }
    bool barrier_while(const KeepWaiting& keep_waiting) override { return inner_.barrier_while(keep_waiting); }

private:
    InProcessTransport inner_;
    int dead_;
};

}  // namespace

TEST_CASE("heartbeat: a live rank is heard at once while the sends to a dead rank hang") {
    // Rank 0 beats every 2 s to ranks 1 and 2; rank 2 is dead, so each of rank 0's sends to it
    // hangs until its limit. A beat of rank 1 must still be recorded within a fraction of the
    // interval: when rank 0 received only after its sends, it was recorded up to 2 s late, and a
    // live rank looked as silent as the dead one.
    InProcessHub hub(3);
    DeadPeerTransport t0(hub, 0, 2);
    HeartbeatConfig c;
    c.notify = {1, 2};
    c.interval_s = 2.0;
    Heartbeat hb(t0, c);
    InProcessTransport t1(hub, 1);
    using Clock = std::chrono::steady_clock;
    for (int beat = 0; beat < 3; ++beat) {
        std::this_thread::sleep_for(std::chrono::milliseconds(700));
        REQUIRE(hb.silent_s(1) > 0.6);  // nothing from rank 1 since the last beat
        t1.send(0, kHeartbeat, nullptr, 0);
        const auto sent = Clock::now();
        while (hb.silent_s(1) > 0.5 && Clock::now() - sent < std::chrono::seconds(3))
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const double took = std::chrono::duration<double>(Clock::now() - sent).count();
        CAPTURE(beat);
        CHECK(took < 0.5);
    }
    CHECK(hb.silent_s(2) > 2.0);  // rank 2 never beats
    // Rank 0's own beats reached rank 1 (the hanging sends to rank 2 did not stop them).
    std::vector<char> buf;
    int beats_at_1 = 0;
    while (t1.recv_while(0, kHeartbeat, buf, [] { return false; })) ++beats_at_1;
    CHECK(beats_at_1 >= 1);
}
