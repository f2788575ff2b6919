// The methods beyond the PS protocols, on the in-process transport. All-reduce SGD: buckets
// formed from the layers' gradient ranges, and lambda learners of mini-batch mu against one
// learner of mini-batch lambda*mu on the same samples, with every learner's model identical after
// the run. EASGD: the centre takes the elastic differences as they are, and converges. Gossip:
// with the learning rate at zero, pull and push rounds bring every model to one value.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "data/batch_stream.h"
#include "dist/methods/allreduce.h"
#include "dist/methods/easgd.h"
#include "dist/methods/gossip.h"
#include "dist/ps/parameter_server.h"
#include "dist/ps/protocol.h"
#include "dist/ps/stats_server.h"
#include "dist/ps/update_rule.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/inprocess_transport.h"
#include "nn/net.h"
#include "nn/solver.h"
#include "test/small_net.h"

using namespace rudra;
using namespace rudra::dist;

namespace {

// The statistics server (rank 1) of a decentralized run on `hub`: learner 0 (rank 0) sends it
// the weights; every epoch line goes to `on_line`.
std::thread stats_server_thread(InProcessHub& hub, int learners, size_t floats, const std::string& protocol,
                                std::function<void(const nlohmann::ordered_json&)> on_line) {
    return std::thread([&hub, learners, floats, protocol, on_line = std::move(on_line)] {
        InProcessTransport t(hub, 1);
        StatsConfig sc;
        sc.ps_rank = 0;
        sc.learners = learners;
        sc.param_floats = floats;
        sc.protocol = protocol;
        run_stats_server(t, sc, [](const float*) { return TestResult{0.5, 1.0, -1.0, {}}; }, [&](const nlohmann::ordered_json& line) {
            if (line.value("event", "") == "epoch") on_line(line);
        });
    });
}

}  // namespace

TEST_CASE("the allreduce protocol: every rank but the statistics server learns, no PS") {
    const Protocol p = Protocol::parse("allreduce", 3);
    CHECK(p.name() == "allreduce");
    CHECK(!p.has_parameter_server());
    CHECK(p.gradients_per_update() == 3);
}

TEST_CASE("gradient buckets: contiguous ranges from the top of the arena down, sent once full") {
    // Layer 2 owns [60,100), layer 1 [20,60) in two ranges, layer 0 [0,20).
    GradientBuckets b({{{0, 20}}, {{40, 60}, {20, 40}}, {{60, 100}}}, 50);
    std::vector<FloatRange> sent;
    auto send = [&](FloatRange r) { sent.push_back(r); };
    b.layer_done(2, send);
    CHECK(sent.empty());  // 40 floats: not full yet
    b.layer_done(1, send);
    REQUIRE(sent.size() == 1);  // [40,100) reached 60 floats
    CHECK(sent[0] == FloatRange{40, 100});
    b.layer_done(0, send);
    b.flush(send);
    REQUIRE(sent.size() == 2);
    CHECK(sent[1] == FloatRange{0, 40});
    // A range that does not touch the pending bucket sends the bucket first.
    GradientBuckets gap({{{0, 10}}, {{50, 60}}}, 1000);
    sent.clear();
    gap.layer_done(1, send);
    gap.layer_done(0, send);
    gap.flush(send);
    REQUIRE(sent.size() == 2);
    CHECK(sent[0] == FloatRange{50, 60});
    CHECK(sent[1] == FloatRange{0, 10});
}

TEST_CASE("in-process sums: every member gets the same sum, in posting order") {
    const int members = 3;
    InProcessSumHub hub(members);
    std::vector<std::vector<float>> data(members);
    std::vector<std::thread> threads;
    for (int m = 0; m < members; ++m) {
        data[m] = {float(m), float(10 * m), 0.1f * float(m + 1)};
        threads.emplace_back([&, m] {
            InProcessSumGroup g(hub, m);
            g.start(data[m].data(), 2);
            g.start(data[m].data() + 2, 1);
            g.wait_all();
        });
    }
    for (auto& t : threads) t.join();
    for (int m = 0; m < members; ++m) {
        CHECK(data[m][0] == 3.0f);
        CHECK(data[m][1] == 30.0f);
        CHECK(std::memcmp(&data[m][2], &data[0][2], sizeof(float)) == 0);
    }
}

TEST_CASE("in-process sums on a BF16 wire: each value and each partial sum rounded to BF16, half the bytes") {
    const int members = 3;
    InProcessSumHub hub(members);
    // 1 + 2^-9 is not a BF16 value (8 significand bits): it is sent as 1.
    const float tiny = 1.0f + 1.0f / 512.0f;
    std::vector<std::vector<float>> data{{tiny, 256.0f}, {tiny, 1.0f}, {tiny, 1.0f}};
    std::vector<int64_t> bytes(members);
    std::vector<std::thread> threads;
    for (int m = 0; m < members; ++m)
        threads.emplace_back([&, m] {
            InProcessSumGroup g(hub, m);
            g.start(data[m].data(), 2, rudra::dist::Wire::Bf16);
            g.wait_all();
            bytes[m] = g.sum_bytes();
        });
    for (auto& t : threads) t.join();
    for (int m = 0; m < members; ++m) {
        CHECK(data[m][0] == 3.0f);  // 1 + 1 + 1, where FP32 gives 3 + 3 * 2^-9
        // 256 + 1 = 257 rounds to 256 (ties to even), and again: each partial sum is rounded.
        CHECK(data[m][1] == 256.0f);
        CHECK(bytes[m] == 4);
    }
}

TEST_CASE("models_agree: true for identical weights, false when one bit of one member differs") {
    for (int differ : {0, 1}) {
        const int members = 3;
        InProcessSumHub hub(members);
        std::vector<std::vector<float>> w(members, std::vector<float>{1.0f, -2.5f, 3.25f, 0.0f});
        if (differ) {
            uint32_t bits;
            std::memcpy(&bits, &w[2][1], 4);
            bits ^= 1;  // the last bit of one weight
            std::memcpy(&w[2][1], &bits, 4);
        }
        std::vector<int> agree(members);
        std::vector<std::thread> threads;
        for (int m = 0; m < members; ++m)
            threads.emplace_back([&, m] {
                InProcessSumGroup g(hub, m);
                agree[m] = models_agree(g, w[m].data(), w[m].size());
            });
        for (auto& t : threads) t.join();
        for (int m = 0; m < members; ++m) CHECK(agree[m] == (differ ? 0 : 1));
    }
}

TEST_CASE("allreduce: lambda learners of mini-batch mu equal one learner of lambda*mu; their models are identical") {
    const std::string text = test::kSmallConvNet;
    const int lambda = 3, mu = 4, epochs = 2;
    data::Dataset d = test::small_dataset(36);  // 36 samples: 3 steps of 12 per epoch
    d.num_classes = 3;
    data::Transform tf;
    tf.scale = 1.0f / 255;
    const nn::NetSpec spec = nn::parse_net_spec(text, "<allreduce>");
    nn::SolverSpec sgd;
    sgd.lr.base_lr = 0.1;
    sgd.momentum = 0.9;
    sgd.weight_decay = 1e-3;
    auto net_for = [&](int batch) {
        nn::NetOptions o;
        o.batch = batch;
        o.data_chw = {1, 6, 6};
        auto n = std::make_unique<nn::Net>(spec, o);
        n->params().fill(9);
        return n;
    };
    std::vector<std::unique_ptr<nn::Net>> nets;
    std::vector<std::unique_ptr<nn::Solver>> solvers;
    std::vector<std::unique_ptr<data::Prefetcher>> streams;
    for (int l = 0; l < lambda; ++l) {
        nets.push_back(net_for(mu));
        solvers.push_back(std::make_unique<nn::Solver>(sgd, nets[l]->params()));
        streams.push_back(std::make_unique<data::Prefetcher>(d, tf, mu, 100 + l, 0));
    }
    const std::vector<float> initial(nets[0]->params().values(), nets[0]->params().values() + nets[0]->params().size());

    // Ranks: 0 learner 0, 1 statistics server, 2.. the other learners.
    InProcessHub hub(lambda + 1);
    InProcessSumHub sums(lambda);
    std::vector<int> epochs_logged;
    std::vector<AllreduceSummary> summaries(lambda);
    std::vector<std::thread> threads;
    threads.push_back(stats_server_thread(hub, lambda, nets[0]->params().size(), "allreduce",
                                          [&](const auto& line) { epochs_logged.push_back(line.value("epoch", 0)); }));
    for (int l = 0; l < lambda; ++l)
        threads.emplace_back([&, l] {
            InProcessTransport t(hub, l == 0 ? 0 : l + 1);
            InProcessSumGroup group(sums, l);
            nn::Net& net = *nets[l];
            AllreduceWork w;
            w.param_floats = net.params().size();
            w.gradients = net.params().grads();
            w.final_after = final_gradients_by_layer(net);
            w.compute = [&net, &streams, l](const std::function<void(size_t)>& after_layer) {
                const data::Batch& b = streams[l]->next();
                std::copy(b.data.begin(), b.data.end(), net.input_data().data);
                std::copy(b.labels.begin(), b.labels.end(), net.input_label()->data);
                net.params().zero_grads();
                const double loss = net.forward();
                net.backward(after_layer);
                return loss;
            };
            w.apply = [&, l](int64_t it) { solvers[l]->apply(nets[l]->params().grads(), it); };
            w.weights = [&net] { return static_cast<const float*>(net.params().values()); };
            AllreduceConfig c;
            c.stats_rank = 1;
            c.batch = mu;
            c.samples_per_epoch = static_cast<int64_t>(d.size());
            c.epochs = epochs;
            c.bucket_floats = 16;  // several buckets for this small net
            c.report_every = 2;
            summaries[l] = run_allreduce_learner(t, group, c, w);
        });
    for (auto& t : threads) t.join();
    const int steps = epochs * static_cast<int>(d.size()) / (lambda * mu);
    for (const AllreduceSummary& s : summaries) CHECK(s.steps == steps);
    CHECK(epochs_logged == std::vector<int>{1, 2});

    // Every learner holds the same model, bit for bit.
    const size_t n = initial.size();
    for (int l = 1; l < lambda; ++l)
        CHECK(std::memcmp(nets[l]->params().values(), nets[0]->params().values(), n * sizeof(float)) == 0);

    // One learner of mini-batch lambda*mu: step k takes every learner's k-th batch.
    auto big = net_for(lambda * mu);
    nn::Solver big_solver(sgd, big->params());
    std::vector<std::unique_ptr<data::Prefetcher>> replay;
    for (int l = 0; l < lambda; ++l) replay.push_back(std::make_unique<data::Prefetcher>(d, tf, mu, 100 + l, 0));
    for (int k = 0; k < steps; ++k) {
        for (int l = 0; l < lambda; ++l) {
            const data::Batch& b = replay[l]->next();
            std::copy(b.data.begin(), b.data.end(), big->input_data().data + l * mu * 36);
            std::copy(b.labels.begin(), b.labels.end(), big->input_label()->data + l * mu);
        }
        big->params().zero_grads();
        big->forward();
        big->backward();
        big_solver.apply(big->params().grads(), k);
    }
    double max_diff = 0, max_change = 0;
    for (size_t i = 0; i < n; ++i) {
        max_diff = std::max(max_diff, double(std::fabs(nets[0]->params().values()[i] - big->params().values()[i])));
        max_change = std::max(max_change, double(std::fabs(initial[i] - big->params().values()[i])));
    }
    CAPTURE(max_diff);
    CAPTURE(max_change);
    CHECK(max_change > 1e-2);
    CHECK(max_diff < 1e-5);
}

TEST_CASE("easgd: the PS's centre moves by each elastic difference as it is, with no rate or momentum") {
    nn::ParamEntry e;
    e.layer = "w";
    e.shape = nn::Shape{2};
    nn::ParamStore p({e});
    p.values()[0] = 1.0f;
    p.values()[1] = -1.0f;
    nn::SolverSpec sgd;
    sgd.lr.base_lr = 0.7;
    sgd.momentum = 0.9;
    nn::Solver solver(sgd, p);
    UpdateRuleConfig cfg;
    cfg.base_scale = 5.0f;
    cfg.modulation = LrModulation::PerGradient;  // ignored: a difference is not a gradient
    UpdateRule rule(Protocol::easgd(2), solver, p, 2, cfg);
    std::vector<float> d1(p.size(), 0.0f), d2(p.size(), 0.0f);  // the whole arena, padding included
    d1[0] = 0.25f;
    d1[1] = 0.5f;
    d2[0] = -0.5f;
    d2[1] = 1.0f;
    CHECK(rule.add_gradient(0, 0, d1.data()));
    CHECK(rule.add_gradient(1, 0, d2.data()));  // one stale: applied as it is all the same
    CHECK(p.values()[0] == 0.75f);
    CHECK(p.values()[1] == 0.5f);
    CHECK(rule.timestamp() == 2);
    CHECK(Protocol::parse("easgd", 4).name() == "easgd");
    CHECK(Protocol::easgd(4).gradients_per_update() == 1);
}

TEST_CASE("easgd: learners stepping on 0.5 |w - 3|^2 pull the centre to the optimum; every process ends") {
    const int lambda = 3, n = 4, epochs = 4;
    const int64_t samples_per_epoch = 40;  // differences of tau = 2 steps of mini-batch 1: 20 per epoch
    nn::ParamEntry e;
    e.layer = "w";
    e.shape = nn::Shape{n};
    nn::ParamStore centre({e});  // starts at 0
    nn::SolverSpec none;
    nn::Solver ps_solver(none, centre);
    UpdateRuleConfig cfg;
    cfg.batch = 2;  // tau x mu: the samples one difference stands for
    UpdateRule rule(Protocol::easgd(lambda), ps_solver, centre, lambda, cfg);
    InProcessHub hub(lambda + 2);
    auto beats = [](std::vector<int> notify) {
        HeartbeatConfig c;
        c.notify = std::move(notify);
        c.interval_s = 1.0;
        return c;
    };
    std::vector<std::thread> threads;
    const size_t floats = centre.size();  // the arena, padding included, as the PS sends it
    std::vector<std::vector<float>> local(lambda, std::vector<float>(floats));
    std::vector<LearnerSummary> summaries(lambda);
    for (int l = 0; l < lambda; ++l)
        threads.emplace_back([&, l] {
            InProcessTransport t(hub, 2 + l);
            Heartbeat hb(t, beats({0}));
            LocalSgdWork w;
            w.param_floats = floats;
            w.weights = local[l].data();
            w.step = [&, l] {
                std::this_thread::sleep_for(std::chrono::microseconds(300));  // a step takes a moment
                double loss = 0;
                for (float& x : local[l]) {  // padding included: it moves to 3 like the rest
                    loss += 0.5 * (x - 3.0f) * (x - 3.0f);
                    x -= 0.2f * (x - 3.0f);
                }
                return loss;
            };
            EasgdConfig c;
            c.tau = 2;
            c.beta = 0.3f;
            c.report_every = 4;
            summaries[l] = run_easgd_learner(t, c, w);
        });
    std::vector<std::string> lines;
    threads.emplace_back([&] {
        InProcessTransport t(hub, 1);
        Heartbeat hb(t, beats({0}));
        StatsConfig sc;
        sc.heartbeat = &hb;
        sc.learners = lambda;
        sc.param_floats = floats;
        sc.protocol = "easgd";
        run_stats_server(t, sc, [](const float*) { return TestResult{0.5, 1.0, -1.0, {}}; },
                         [&](const nlohmann::ordered_json& line) { lines.push_back(line.dump()); });
    });
    InProcessTransport t(hub, 0);
    PsConfig pc;
    for (int l = 0; l < lambda; ++l) pc.learner_ranks.push_back(2 + l);
    pc.samples_per_epoch = samples_per_epoch;
    pc.epochs = epochs;
    Heartbeat hb(t, beats({1, 2, 3, 4}));
    PsHooks hooks;
    hooks.heartbeat = &hb;
    ParameterServer ps(t, rule, centre, pc, hooks);
    const PsResult r = ps.run();
    for (auto& th : threads) th.join();
    CHECK(r.end == PsResult::End::Finished);
    CHECK(r.updates == epochs * samples_per_epoch / 2);
    int epoch_lines = 0;
    for (const auto& l : lines) epoch_lines += l.find("\"event\":\"epoch\"") != std::string::npos;
    CHECK(epoch_lines == epochs);
    for (int i = 0; i < n; ++i) CHECK(centre.values()[i] == doctest::Approx(3.0).epsilon(0.02));
    for (const auto& s : summaries) CHECK(s.minibatches >= 2);
}

namespace {

// Gossip among `lambda` learners whose steps change nothing (learning rate zero), from models
// that differ (or from `start`); `adjust` may change each learner's settings. Returns each
// learner's summary and final model.
struct GossipOutcome {
    std::vector<GossipSummary> summaries;
    std::vector<std::vector<float>> models;
    std::vector<double> logged_spreads;
};

GossipOutcome gossip_at_rate_zero(GossipMode mode, int lambda, int tau, int epochs,
                                  const std::function<void(GossipConfig&, int learner)>& adjust = {},
                                  const std::vector<float>* start = nullptr) {
    const size_t n = 5;
    GossipOutcome out;
    out.summaries.resize(lambda);
    out.models.resize(lambda);
    for (int l = 0; l < lambda; ++l)
        for (size_t i = 0; i < n; ++i)
            out.models[l].push_back(start ? (*start)[i] : float(l * 10) + float(i));  // spread ~ 10s
    InProcessHub hub(lambda + 1);  // ranks: 0 learner 0, 1 statistics server, 2.. the others
    InProcessSumHub sums(lambda);
    std::vector<int> ranks{0};
    for (int l = 1; l < lambda; ++l) ranks.push_back(l + 1);
    std::vector<std::thread> threads;
    threads.push_back(stats_server_thread(hub, lambda, n, "gossip",
                                          [&](const auto& line) { out.logged_spreads.push_back(line.value("spread", -1.0)); }));
    for (int l = 0; l < lambda; ++l)
        threads.emplace_back([&, l] {
            InProcessTransport t(hub, ranks[l]);
            InProcessSumGroup group(sums, l);
            LocalSgdWork w;
            w.param_floats = n;
            w.weights = out.models[l].data();
            // 2 ms per step: the serving threads take the pushed models as they come even under
            // ThreadSanitizer (at 200 us, 2 of 9 TSan runs ended epoch 1 with a spread of 12-17).
            w.step = [] {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                return 0.0;
            };
            GossipConfig c;
            c.mode = mode;
            c.tau = tau;
            c.seed = 7;
            c.learner_ranks = ranks;
            c.batch = 1;
            c.samples_per_epoch = 20 * lambda;  // 20 local steps per learner per epoch
            c.epochs = epochs;
            c.report_every = 5;
            if (adjust) adjust(c, l);
            out.summaries[l] = run_gossip_learner(t, group, c, w);
        });
    for (auto& t : threads) t.join();
    return out;
}

}  // namespace

TEST_CASE("gossip at learning rate zero: pull and push rounds bring every learner's model to one value") {
    for (GossipMode mode : {GossipMode::Pull, GossipMode::Push}) {
        CAPTURE(mode == GossipMode::Pull ? "pull" : "push");
        const int lambda = 4, epochs = 3;
        const GossipOutcome o = gossip_at_rate_zero(mode, lambda, 1, epochs);
        REQUIRE(o.logged_spreads.size() == size_t(epochs));
        for (const GossipSummary& s : o.summaries) {
            CHECK(s.steps == 20 * epochs);
            CHECK(s.peers.size() == size_t(20 * epochs));  // tau 1: an exchange every step
            REQUIRE(s.spreads.size() == size_t(epochs));
            CHECK(s.spreads == o.summaries[0].spreads);  // every learner computed the same spread
        }
        // The spread falls epoch by epoch, from tens to almost nothing (pull's may reach exactly 0
        // within the first epoch).
        CHECK(o.logged_spreads[0] < 10.0);
        CHECK(o.logged_spreads[2] <= o.logged_spreads[0]);
        CHECK(o.logged_spreads[2] < 1e-2);
        for (int l = 1; l < lambda; ++l)
            for (size_t i = 0; i < o.models[0].size(); ++i)
                CHECK(o.models[l][i] == doctest::Approx(o.models[0][i]).epsilon(1e-3));
        // Peers are never the learner itself, and are recorded.
        for (int r : o.summaries[0].peers) CHECK(r != 0);
    }
}

TEST_CASE("gossip: the peer choices follow the seed; one learner is an error") {
    const GossipOutcome a = gossip_at_rate_zero(GossipMode::Pull, 3, 2, 1);
    const GossipOutcome b = gossip_at_rate_zero(GossipMode::Pull, 3, 2, 1);
    for (int l = 0; l < 3; ++l) CHECK(a.summaries[l].peers == b.summaries[l].peers);
    CHECK(a.summaries[0].peers.size() == 10);  // 20 steps, tau 2
    CHECK_THROWS_WITH(Protocol::parse("gossip-pull", 1), doctest::Contains("needs at least 2 learners"));
    CHECK(Protocol::parse("gossip-push", 3).name() == "gossip-push");
    CHECK(!Protocol::parse("gossip-push", 3).has_parameter_server());
}

TEST_CASE("gossip: a stop asked of one learner ends its epoch there; all stop; the run resumes where each stopped") {
    for (GossipMode mode : {GossipMode::Pull, GossipMode::Push}) {
        CAPTURE(mode == GossipMode::Pull ? "pull" : "push");
        const int lambda = 3, epochs = 3, per_epoch = 20;
        struct Checkpoint {
            std::string reason;
            std::vector<float> average;
            int64_t steps = 0, samples = 0;
            std::vector<int64_t> taken;
        };
        std::vector<Checkpoint> checkpoints;  // written by learner 0 only
        const GossipOutcome a = gossip_at_rate_zero(mode, lambda, 1, epochs, [&](GossipConfig& c, int l) {
            // Learner 1 is asked to stop before its 26th step: 5 steps into epoch 2.
            if (l == 1) c.stop_requested = [asks = 0]() mutable { return ++asks > 25; };
            if (l == 0)
                c.checkpoint = [&](const std::string& reason, const float* average, int64_t steps,
                                   const std::vector<int64_t>& taken, int64_t samples, double) {
                    checkpoints.push_back({reason, std::vector<float>(average, average + 5), steps, samples, taken});
                };
        });
        CHECK(a.logged_spreads.size() == 1);  // epoch 2 was not completed: no epoch line for it
        for (const GossipSummary& s : a.summaries) {
            CHECK(s.stopped);
            CHECK(s.epoch == 1);
            CHECK(s.steps >= per_epoch);
            CHECK(s.steps <= 2 * per_epoch);
        }
        CHECK(a.summaries[1].steps == 25);
        REQUIRE(checkpoints.size() == 2);
        CHECK(checkpoints[0].reason == "epoch");
        const Checkpoint& k = checkpoints[1];
        CHECK(k.reason == "signal");
        CHECK(k.steps == per_epoch);
        REQUIRE(k.taken.size() == size_t(lambda));
        int64_t partial = 0;
        for (int l = 0; l < lambda; ++l) {
            CHECK(k.taken[l] == a.summaries[l].steps);
            partial += k.taken[l] - per_epoch;
        }
        CHECK(k.samples == per_epoch * lambda + std::min<int64_t>(partial, per_epoch * lambda - 1));
        // Resumed from that checkpoint: every learner completes epoch 2 from where it stopped, then
        // epoch 3; each takes 60 steps in all, and its exchanges go on at its own step count.
        const GossipOutcome b = gossip_at_rate_zero(
            mode, lambda, 1, epochs,
            [&](GossipConfig& c, int l) {
                c.first_epoch = 1;
                c.start_steps = k.steps;
                c.start_partial = k.taken[l] - k.steps;
            },
            &k.average);
        CHECK(b.logged_spreads.size() == 2);
        for (int l = 0; l < lambda; ++l) {
            CHECK(!b.summaries[l].stopped);
            CHECK(b.summaries[l].epoch == epochs);
            CHECK(k.taken[l] + b.summaries[l].steps == epochs * per_epoch);
            CHECK(b.summaries[l].peers.size() == size_t(b.summaries[l].steps));  // tau 1
        }
    }
}
