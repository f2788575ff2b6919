// rudra dist: the parameter-server system on MPI ranks. Rank 0 is the parameter server, rank 1
// the statistics server, ranks 2.. the learners (lambda = ranks - 2).
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "data/batch_stream.h"
#include "dist/learner.h"
#include "dist/mpi_transport.h"
#include "dist/parameter_server.h"
#include "dist/stats_server.h"
#include "dist/update_rule.h"
#include "nn/snapshot.h"
#include "nn/solver.h"
#include "tools/commands.h"
#include "tools/metrics_log.h"

namespace rudra::tools {
namespace {

namespace fs = std::filesystem;
constexpr int kPsRank = 0, kStatsRank = 1, kFirstLearner = 2;

// Everything a role needs from the solver, net and data files.
struct Setup {
    nn::SolverSpec solver;
    nn::NetSpec net;
    uint64_t seed = 1;
    // --warm-start: the snapshot, and the samples it had trained on. A warm-started run goes on
    // from there: the solver's schedule and the epoch count continue, --epochs is the total.
    nn::Snapshot warm;
    int64_t start_samples = 0;

    const nn::LayerSpec& train_layer() const { return *net.data_layer(nn::Phase::Train); }  // checked in read_setup
    // The TEST Data layer, or the TRAIN one when the net has none.
    const nn::LayerSpec& test_layer() const {
        const nn::LayerSpec* l = net.data_layer(nn::Phase::Test);
        return l ? *l : train_layer();
    }
    bool has_test_layer() const { return net.data_layer(nn::Phase::Test) != nullptr; }
};

Setup read_setup(const DistOptions& o) {
    Setup s;
    s.solver = nn::load_solver_spec(o.solver);
    s.net = nn::load_net_spec(s.solver.net);
    if (!s.net.data_layer(nn::Phase::Train))
        throw std::runtime_error(s.solver.net + ": the net has no Data layer for phase TRAIN");
    s.seed = o.seed >= 0 ? o.seed : (s.solver.random_seed >= 0 ? s.solver.random_seed : 1);
    if (o.base_lr > 0) s.solver.lr.base_lr = o.base_lr;
    if (o.momentum >= 0) s.solver.momentum = o.momentum;
    if (!o.warm_start.empty()) {
        s.warm = nn::read_snapshot(o.warm_start);
        s.start_samples = static_cast<int64_t>(s.warm.samples_seen);
    }
    return s;
}

nn::NetOptions net_options(const data::Dataset& d, nn::Phase phase, int batch, uint64_t seed,
                           const nn::KernelOptions& kernels) {
    nn::NetOptions no;
    no.kernels = kernels;
    no.phase = phase;
    no.batch = batch;
    no.data_chw = {d.channels, d.height, d.width};
    no.seed = seed;
    return no;
}

void run_ps(const DistOptions& o, const Setup& s, dist::Transport& t, int lambda, const data::TrainTest& sets,
            const dist::WaitPolicy& wait) {
    nn::Net net(s.net, net_options(sets.train, nn::Phase::Train, o.batch, s.seed, o.kernels));
    nn::ParamStore& params = net.params();
    nn::Solver solver(s.solver, params);
    params.fill(s.seed);
    if (!o.warm_start.empty()) {
        const nn::Snapshot& snap = s.warm;
        if (snap.layout_hash != params.layout_hash() || snap.params.size() != params.size())
            throw std::runtime_error(o.warm_start + ": the snapshot's parameters do not match net " + s.solver.net);
        std::copy(snap.params.begin(), snap.params.end(), params.values());
        if (snap.solver_type == static_cast<uint32_t>(s.solver.type) && snap.history.size() == solver.history_size())
            std::copy(snap.history.begin(), snap.history.end(), solver.history());
    }
    auto protocol = dist::make_protocol(o.protocol, lambda, o.n);
    dist::UpdateRuleConfig rc;
    rc.modulation = dist::parse_lr_modulation(o.lr_modulation.empty()
                                                  ? (o.protocol == "softsync" ? "average" : "none")
                                                  : o.lr_modulation);
    rc.batch = net.batch();
    rc.momentum_compensation = o.momentum_compensation;
    rc.start_samples = s.start_samples;
    rc.reference_batch = o.reference_batch > 0 ? o.reference_batch : s.train_layer().batch_size;
    if (protocol->synchronous()) rc.base_scale = static_cast<float>(std::sqrt(double(lambda) * rc.batch / rc.reference_batch));
    dist::UpdateRule rule(*protocol, solver, params, lambda, rc);
    dist::PsConfig pc;
    for (int r = kFirstLearner; r < t.size(); ++r) pc.learner_ranks.push_back(r);
    pc.stats_rank = kStatsRank;
    pc.samples_per_epoch = sets.train.size();
    pc.epochs = o.epochs;
    std::printf("rudra dist: %s, %d learners, mini-batch %d, %s, base_lr %g x %.4g, %d epochs of %lld images, "
                "wait: spin %d then sleep %d us, output %s\n",
                protocol->name().c_str(), lambda, rc.batch, o.mode.c_str(), s.solver.lr.base_lr, rc.base_scale, o.epochs,
                static_cast<long long>(pc.samples_per_epoch), wait.spin, wait.sleep_us, o.output.c_str());
    std::fflush(stdout);
    dist::ParameterServer ps(t, rule, params, pc);
    t.barrier();
    dist::PsResult r = ps.run();

    nn::Snapshot snap;
    snap.iteration = static_cast<uint64_t>(r.updates);
    snap.samples_seen = static_cast<uint64_t>(r.samples);
    snap.data_seed = s.seed;
    snap.layout_hash = params.layout_hash();
    snap.solver_type = static_cast<uint32_t>(s.solver.type);
    snap.params.assign(params.values(), params.values() + params.size());
    snap.history.assign(solver.history(), solver.history() + solver.history_size());
    const std::string snap_path = (fs::path(o.output) / "final.rudra").string();
    nn::write_snapshot(snap_path, snap);
    const std::string stale_path = (fs::path(o.output) / "staleness.json").string();
    rule.staleness().write_json(stale_path, protocol->name());
    std::printf("PS: %lld updates, %lld gradients (%lld more arrived after the last epoch and were dropped), "
                "staleness mean %.3f max %lld, %.1f s; snapshot %s, staleness %s\n",
                static_cast<long long>(r.updates), static_cast<long long>(rule.staleness().gradients()),
                static_cast<long long>(r.dropped_gradients),
                rule.staleness().mean(), static_cast<long long>(rule.staleness().max()), r.elapsed_s,
                snap_path.c_str(), stale_path.c_str());
}

void run_stats(const DistOptions& o, const Setup& s, dist::Transport& t, int lambda, const data::TrainTest& sets) {
    nn::Net net(s.net, net_options(sets.test, nn::Phase::Test, s.has_test_layer() ? 0 : o.batch, s.seed, o.kernels));
    std::vector<std::string> notes;
    std::vector<float> mean;
    const data::Transform tf = make_transform(s.test_layer().transform, sets.train, mean, notes);
    MetricsLog log((fs::path(o.output) / "metrics.jsonl").string(), false);
    log.write({{"event", "start"}, {"solver", o.solver}, {"protocol", o.protocol}, {"n", o.n}, {"learners", lambda},
               {"batch", o.batch}, {"mode", o.mode}, {"epochs", o.epochs}, {"lr_modulation", o.lr_modulation}, {"momentum_compensation", o.momentum_compensation},
               {"warm_start", o.warm_start}, {"base_lr", s.solver.lr.base_lr}, {"momentum", s.solver.momentum},
               {"train_images", sets.train.size()}, {"test_images", sets.test.size()}});
    dist::StatsConfig sc;
    sc.ps_rank = kPsRank;
    sc.learners = lambda;
    sc.param_floats = net.params().size();
    sc.protocol = o.protocol == "softsync" ? std::to_string(o.n) + "-softsync" : o.protocol;
    sc.start_samples = s.start_samples;
    sc.on_epoch = [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    };
    t.barrier();
    dist::run_stats_server(
        t, sc,
        [&](const float* w) {
            std::memcpy(net.params().values(), w, sizeof(float) * net.params().size());
            EvalResult r = evaluate(net, sets.test, tf);
            return dist::TestResult{r.accuracy, r.loss};
        },
        [&](const std::string& line) { log.write_line(line); });
}

void run_learner_role(const DistOptions& o, const Setup& s, dist::Transport& t, const data::TrainTest& sets,
                      const Binding& binding) {
    const int rank = t.rank();
    nn::Net net(s.net, net_options(sets.train, nn::Phase::Train, o.batch, s.seed + rank, o.kernels));
    std::vector<std::string> notes;
    std::vector<float> mean;
    const data::Transform tf = make_transform(s.train_layer().transform, sets.train, mean, notes);
    // Each learner samples its own seeded stream over the whole training set.
    data::Prefetcher prefetch(sets.train, tf, net.batch(), s.seed * 7919 + static_cast<uint64_t>(rank), 0,
                              binding.helper_thread);
    nn::ParamStore& params = net.params();
    nn::Blob& x = net.input_data();
    nn::Blob& y = *net.input_label();
    dist::LearnerWork work;
    work.param_floats = params.size();
    work.load_weights = [&](const float* w) { std::memcpy(params.values(), w, sizeof(float) * params.size()); };
    work.compute = [&]() {
        const data::Batch& b = prefetch.next();
        std::memcpy(x.data, b.data.data(), sizeof(float) * x.count());
        std::memcpy(y.data, b.labels.data(), sizeof(float) * y.count());
        params.zero_grads();
        const double loss = net.forward();
        net.backward();
        return loss;
    };
    work.gradients = params.grads();
    dist::LearnerConfig lc;
    lc.ps_rank = kPsRank;
    lc.stats_rank = kStatsRank;
    lc.overlap = o.mode == "overlap";
    lc.synchronous = o.protocol == "hardsync";
    t.barrier();
    dist::run_learner(t, lc, work);
}

}  // namespace

int run_dist(const DistOptions& o, int* argc, char*** argv) {
    dist::MpiSession mpi(argc, argv);
    dist::WaitPolicy wait = dist::WaitPolicy::for_load(dist::MpiSession::ranks_on_this_node(), o.threads,
                                                       static_cast<int>(std::thread::hardware_concurrency()));
    if (o.wait_spin >= 0) wait.spin = o.wait_spin;
    if (o.wait_sleep_us >= 0) wait.sleep_us = o.wait_sleep_us;
    dist::MpiTransport transport(wait);
    const int rank = transport.rank();
    try {
        if (transport.size() < 3)
            throw std::runtime_error("rudra dist needs at least 3 ranks (parameter server, statistics server, a learner); got " +
                                     std::to_string(transport.size()));
        const int lambda = transport.size() - kFirstLearner;
        if (o.mode != "base" && o.mode != "overlap") throw std::runtime_error("--mode must be base or overlap");
        dist::make_protocol(o.protocol, lambda, o.n);  // validates protocol and n on every rank
        if (!o.lr_modulation.empty()) dist::parse_lr_modulation(o.lr_modulation);
        omp_set_num_threads(o.threads);
        const Binding binding = bind_threads(o.bind, dist::MpiSession::ranks_on_this_node(),
                                             dist::MpiSession::rank_on_this_node(), o.threads);
        if (!binding.message.empty() && rank == kPsRank) std::printf("rank 0 %s\n", binding.message.c_str());
        Setup s = read_setup(o);
        data::TrainTest sets = load_data(o.data);
        const int64_t done_epochs = s.start_samples / std::max<int64_t>(1, static_cast<int64_t>(sets.train.size()));
        if (done_epochs >= o.epochs)
            throw std::runtime_error(o.warm_start + " has trained " + std::to_string(done_epochs) +
                                     " epochs already; --epochs is the total and must be larger");
        if (rank == kPsRank) {
            fs::create_directories(o.output);
            run_ps(o, s, transport, lambda, sets, wait);
        } else if (rank == kStatsRank) {
            fs::create_directories(o.output);
            run_stats(o, s, transport, lambda, sets);
        } else {
            run_learner_role(o, s, transport, sets, binding);
        }
    } catch (const std::exception& e) {
        // The same bad input fails on every rank: rank 0 reports it and ends them all; a rank
        // that fails alone reports after a moment and ends them all.
        if (rank != kPsRank) sleep(2);
        std::fflush(stdout);
        std::fprintf(stderr, "rudra dist [rank %d]: error: %s\n", rank, e.what());
        std::fflush(stderr);
        usleep(300000);  // let mpiexec relay the message before MPI_Abort ends its proxies
        dist::MpiSession::abort_all(1);
    }
    return 0;
}

}  // namespace rudra::tools
