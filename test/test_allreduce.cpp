// All-reduce SGD on the in-process transport and sum group: buckets formed from the layers'
// gradient ranges, and lambda learners of mini-batch mu against one learner of mini-batch
// lambda*mu on the same samples, with every learner's model identical after the run.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "data/batch_stream.h"
#include "dist/allreduce.h"
#include "dist/inprocess_transport.h"
#include "dist/protocol.h"
#include "dist/stats_server.h"
#include "nn/net.h"
#include "nn/solver.h"

using namespace rudra;
using namespace rudra::dist;

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
    const std::string text = R"(
        layer { name: 'd' type: 'Data' top: 'data' top: 'label' data_param { batch_size: 4 } }
        layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
                convolution_param { num_output: 3 kernel_size: 3 pad: 1 weight_filler { type: 'xavier' } } }
        layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
        layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool' pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
        layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
                inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
        layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
    )";
    const int lambda = 3, mu = 4, epochs = 2;
    data::Dataset d;
    d.channels = 1;
    d.height = d.width = 6;
    std::mt19937 rng(3);
    for (int i = 0; i < 36; ++i) {  // 36 samples: 3 steps of 12 per epoch
        d.labels.push_back(static_cast<uint8_t>(i % 3));
        for (int p = 0; p < 36; ++p) d.pixels.push_back(static_cast<uint8_t>(rng() % 64 + (p % 3 == i % 3 ? 150 : 0)));
    }
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
    threads.emplace_back([&] {
        InProcessTransport t(hub, 1);
        StatsConfig sc;
        sc.ps_rank = 0;
        sc.learners = lambda;
        sc.param_floats = nets[0]->params().size();
        sc.protocol = "allreduce";
        run_stats_server(t, sc, [](const float*) { return TestResult{0.5, 1.0}; },
                         [&](const nlohmann::ordered_json& line) {
                             if (line.value("event", "") == "epoch") epochs_logged.push_back(line.value("epoch", 0));
                         });
    });
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
