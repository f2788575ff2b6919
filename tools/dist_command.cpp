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
#include "dist/messages.h"
#include "dist/mpi_transport.h"
#include "dist/parameter_server.h"
#include "dist/stats_server.h"
#include "dist/update_rule.h"
#include "kernels/sgemm/sgemm.h"
#include "nn/snapshot.h"
#include "session/metrics_log.h"
#include "session/training_session.h"
#include "tools/commands.h"

namespace rudra::tools {
namespace {

namespace fs = std::filesystem;
constexpr int kPsRank = 0, kStatsRank = 1, kFirstLearner = 2;

// Everything a role needs from the solver, net and data files.
struct Setup {
    session::SessionSpec spec;  // the solver with the command line's overrides, the net, the kernels
    // --warm-start: the snapshot, and the samples it had trained on. A warm-started run goes on
    // from there: the solver's schedule and the epoch count continue, --epochs is the total.
    nn::Snapshot warm;
    int64_t start_samples = 0;

    const nn::LayerSpec& train_layer() const { return *spec.net.data_layer(nn::Phase::Train); }  // checked below
};

Setup read_setup(const DistOptions& o) {
    Setup s;
    s.spec.solver = nn::load_solver_spec(o.solver);
    s.spec.net = nn::load_net_spec(s.spec.solver.net);
    if (!s.spec.net.data_layer(nn::Phase::Train))
        throw std::runtime_error(s.spec.solver.net + ": the net has no Data layer for phase TRAIN");
    s.spec.kernels = o.kernels;
    s.spec.batch = o.batch;
    s.spec.seed = o.seed >= 0 ? o.seed : (s.spec.solver.random_seed >= 0 ? s.spec.solver.random_seed : 1);
    if (o.base_lr > 0) s.spec.solver.lr.base_lr = o.base_lr;
    if (o.momentum >= 0) s.spec.solver.momentum = o.momentum;
    if (!o.warm_start.empty()) {
        s.warm = nn::read_snapshot(o.warm_start);
        s.start_samples = static_cast<int64_t>(s.warm.samples_seen);
    }
    return s;
}

void run_ps(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
            const data::TrainTest& sets, const dist::WaitPolicy& wait) {
    const int lambda = protocol.learners();
    session::SessionSpec spec = s.spec;
    spec.kernels.conv = "own";  // the PS's net only holds the parameters: no backend to choose
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = true});
    if (!o.warm_start.empty()) run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    nn::ParamStore& params = run.params();
    dist::UpdateRuleConfig rc;
    rc.modulation =
        o.lr_modulation.empty() ? protocol.default_modulation() : dist::parse_lr_modulation(o.lr_modulation);
    rc.batch = run.batch();
    rc.momentum_compensation = o.momentum_compensation;
    rc.start_samples = s.start_samples;
    rc.reference_batch = o.reference_batch > 0 ? o.reference_batch : s.train_layer().batch_size;
    if (protocol.synchronous())
        rc.base_scale = static_cast<float>(std::sqrt(double(lambda) * rc.batch / rc.reference_batch));
    dist::UpdateRule rule(protocol, run.solver(), params, lambda, rc);
    dist::PsConfig pc;
    for (int r = kFirstLearner; r < t.size(); ++r) pc.learner_ranks.push_back(r);
    pc.stats_rank = kStatsRank;
    pc.samples_per_epoch = sets.train.size();
    pc.epochs = o.epochs;
    std::printf(
        "rudra dist: %s, %d learners, mini-batch %d, %s, base_lr %g x %.4g, %d epochs of %lld images, "
        "wait: spin %d then sleep %d us, output %s\n",
        protocol.name().c_str(), lambda, rc.batch, o.mode.c_str(), s.spec.solver.lr.base_lr, rc.base_scale, o.epochs,
        static_cast<long long>(pc.samples_per_epoch), wait.spin, wait.sleep_us, o.output.c_str());
    std::fflush(stdout);
    dist::ParameterServer ps(t, rule, params, pc);
    t.barrier();
    dist::PsResult r = ps.run();

    const std::string snap_path = (fs::path(o.output) / "final.rudra").string();
    nn::write_snapshot(snap_path,
                       run.snapshot(static_cast<uint64_t>(r.updates), static_cast<uint64_t>(r.samples), s.spec.seed));
    const std::string stale_path = (fs::path(o.output) / "staleness.json").string();
    rule.staleness().write_json(stale_path, protocol.name());
    std::printf("PS: %lld updates, %lld gradients (%lld more arrived after the last epoch and were dropped), "
                "staleness mean %.3f max %lld, %.1f s; snapshot %s, staleness %s\n",
                static_cast<long long>(r.updates), static_cast<long long>(rule.staleness().gradients()),
                static_cast<long long>(r.dropped_gradients),
                rule.staleness().mean(), static_cast<long long>(rule.staleness().max()), r.elapsed_s,
                snap_path.c_str(), stale_path.c_str());
}

void run_stats(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
               const data::TrainTest& sets) {
    const int lambda = protocol.learners();
    session::TrainingSession run(s.spec, sets, {.train_net = false, .test_net = true, .solver = false});
    session::MetricsLog log((fs::path(o.output) / "metrics.jsonl").string(), false);
    log.write({{"event", "start"},
               {"solver", o.solver},
               {"protocol", o.protocol},
               {"n", o.n},
               {"learners", lambda},
               {"batch", o.batch},
               {"mode", o.mode},
               {"epochs", o.epochs},
               {"lr_modulation", o.lr_modulation},
               {"momentum_compensation", o.momentum_compensation},
               {"warm_start", o.warm_start},
               {"base_lr", s.spec.solver.lr.base_lr},
               {"momentum", s.spec.solver.momentum},
               {"train_images", sets.train.size()},
               {"test_images", sets.test.size()}});
    dist::StatsConfig sc;
    sc.ps_rank = kPsRank;
    sc.learners = lambda;
    sc.param_floats = run.params().size();
    sc.protocol = protocol.name();
    sc.start_samples = s.start_samples;
    sc.on_epoch = [](const nlohmann::ordered_json& line) {
        std::printf("%s\n", line.dump().c_str());
        std::fflush(stdout);
    };
    t.barrier();
    dist::run_stats_server(
        t, sc,
        [&](const float* w) {
            std::memcpy(run.params().values(), w, sizeof(float) * run.params().size());
            const session::EvalResult r = run.evaluate();
            return dist::TestResult{r.accuracy, r.loss};
        },
        [&](const nlohmann::ordered_json& line) { log.write(line); });
}

void run_learner_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                      const data::TrainTest& sets, const Binding& binding) {
    const int rank = t.rank();
    session::SessionSpec spec = s.spec;
    spec.seed = s.spec.seed + rank;  // each learner's own dropout stream
    // `auto` backends are measured once for the job: the first learner measures (or reads its
    // cache) and sends its choices to the other learners, whose nets have the same shapes.
    const bool measure_once = spec.kernels.uses_auto() && t.size() > kFirstLearner + 1;
    if (measure_once && rank != kFirstLearner) {
        std::vector<char> text;
        t.recv(kFirstLearner, dist::kKernelChoices, text);
        spec.kernels.conv.assign(text.begin(), text.end());
    }
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = false});
    if (measure_once && rank == kFirstLearner) {
        const std::string chosen = run.resolved_kernels().conv;
        for (int r = kFirstLearner + 1; r < t.size(); ++r)
            t.send(r, dist::kKernelChoices, chosen.data(), chosen.size());
        std::printf("rank %d: --conv-backend %s for the learners: %s\n", rank, s.spec.kernels.conv.c_str(),
                    chosen.c_str());
        std::fflush(stdout);
    }
    // Each learner samples its own seeded stream over the whole training set.
    data::Prefetcher prefetch(sets.train, run.train_transform(), run.batch(),
                              s.spec.seed * 7919 + static_cast<uint64_t>(rank), 0, binding.helper_thread);
    nn::ParamStore& params = run.params();
    dist::LearnerWork work;
    work.param_floats = params.size();
    work.load_weights = [&](const float* w) { std::memcpy(params.values(), w, sizeof(float) * params.size()); };
    work.compute = [&]() { return run.compute_gradient(prefetch.next()); };
    work.gradients = params.grads();
    dist::LearnerConfig lc;
    lc.ps_rank = kPsRank;
    lc.stats_rank = kStatsRank;
    lc.overlap = o.mode == "overlap";
    lc.synchronous = protocol.synchronous();
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
        kernels::selected_micro_kernel();  // a bad RUDRA_ISA or RUDRA_SGEMM_BLOCKS, before any work
        if (transport.size() < 3)
            throw std::runtime_error(
                "rudra dist needs at least 3 ranks (parameter server, statistics server, a learner); got " +
                std::to_string(transport.size()));
        const int lambda = transport.size() - kFirstLearner;
        if (o.mode != "base" && o.mode != "overlap") throw std::runtime_error("--mode must be base or overlap");
        const dist::Protocol protocol = dist::Protocol::parse(o.protocol, lambda, o.n);  // on every rank
        if (!o.lr_modulation.empty()) dist::parse_lr_modulation(o.lr_modulation);
        omp_set_num_threads(o.threads);
        const Binding binding = bind_threads(o.bind, dist::MpiSession::ranks_on_this_node(),
                                             dist::MpiSession::rank_on_this_node(), o.threads);
        if (!binding.message.empty() && rank == kPsRank) std::printf("rank 0 %s\n", binding.message.c_str());
        Setup s = read_setup(o);
        const data::TrainTest sets = session::load_data(o.data);
        const int64_t done_epochs = s.start_samples / std::max<int64_t>(1, static_cast<int64_t>(sets.train.size()));
        if (done_epochs >= o.epochs)
            throw std::runtime_error(o.warm_start + " has trained " + std::to_string(done_epochs) +
                                     " epochs already; --epochs is the total and must be larger");
        if (rank == kPsRank) {
            fs::create_directories(o.output);
            run_ps(o, s, transport, protocol, sets, wait);
        } else if (rank == kStatsRank) {
            fs::create_directories(o.output);
            run_stats(o, s, transport, protocol, sets);
        } else {
            run_learner_role(o, s, transport, protocol, sets, binding);
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
