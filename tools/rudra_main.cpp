// The `rudra` command: train, test, time.
#include <omp.h>

#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "tools/commands.h"

namespace {

void add_data_options(CLI::App* cmd, rudra::tools::DataOptions& d) {
    cmd->add_option("--data", d.dir, "data set directory (IDX or CIFAR-10 binary files)")->capture_default_str();
    cmd->add_option("--format", d.format, "data set format")
        ->check(CLI::IsMember({"auto", "idx", "cifar10"}))
        ->capture_default_str();
    cmd->add_option("--train-limit", d.train_limit, "use only the first N training images (0: all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--test-limit", d.test_limit, "use only the first N test images (0: all)")
        ->check(CLI::NonNegativeNumber);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"rudra: a deep learning engine for CPU clusters (Caffe prototxt models, SGD solvers)"};
    app.require_subcommand(1);
    int threads = 0;
    app.add_option("-t,--threads", threads, "OpenMP threads (0: all cores)")->check(CLI::NonNegativeNumber);

    rudra::tools::TrainOptions train;
    auto* t = app.add_subcommand("train", "train a net from a Caffe solver file");
    t->add_option("solver", train.solver, "solver prototxt")->required()->check(CLI::ExistingFile);
    add_data_options(t, train.data);
    t->add_option("--epochs", train.epochs, "epochs to train (overrides the solver's max_iter)")
        ->check(CLI::PositiveNumber);
    t->add_option("--batch", train.batch, "mini-batch size (overrides the Data layer's batch_size)")
        ->check(CLI::PositiveNumber);
    t->add_option("--seed", train.seed, "random seed for initialisation and sampling")->check(CLI::NonNegativeNumber);
    t->add_option("-o,--output", train.output, "directory for metrics.jsonl and snapshots")->capture_default_str();
    t->add_option("--resume", train.resume, "continue from this snapshot")->check(CLI::ExistingFile);
    t->add_option("-t,--threads", threads, "OpenMP threads (0: all cores)")->check(CLI::NonNegativeNumber);

    rudra::tools::TestOptions test;
    auto* e = app.add_subcommand("test", "evaluate a snapshot on the test set");
    e->add_option("model", test.model, "solver or net prototxt")->required()->check(CLI::ExistingFile);
    e->add_option("snapshot", test.snapshot, "snapshot file written by rudra train")->required()->check(CLI::ExistingFile);
    add_data_options(e, test.data);
    e->add_option("--batch", test.batch, "mini-batch size for evaluation")->check(CLI::PositiveNumber);
    e->add_option("-t,--threads", threads, "OpenMP threads (0: all cores)")->check(CLI::NonNegativeNumber);

    rudra::tools::TimeOptions time;
    auto* m = app.add_subcommand("time", "time forward and backward per layer");
    m->add_option("model", time.model, "solver or net prototxt")->required()->check(CLI::ExistingFile);
    m->add_option("--batch", time.batch, "mini-batch size (default: the file's)")->check(CLI::PositiveNumber);
    m->add_option("--iterations", time.iterations, "timed iterations")->check(CLI::PositiveNumber)->capture_default_str();
    m->add_option("--input-shape", time.input_shape, "sample shape C,H,W for nets with a Data layer");
    m->add_option("--phase", time.phase, "net phase")->check(CLI::IsMember({"train", "test"}))->capture_default_str();
    m->add_option("--json", time.json, "also write the timings as a JSON line to this file");
    m->add_option("-t,--threads", threads, "OpenMP threads (0: all cores)")->check(CLI::NonNegativeNumber);

#ifdef RUDRA_HAVE_MPI
    rudra::tools::DistOptions dist;
    auto* d = app.add_subcommand("dist", "distributed training: mpiexec -n K rudra dist SOLVER (rank 0 parameter server, "
                                         "rank 1 statistics server, K-2 learners)");
    d->add_option("solver", dist.solver, "solver prototxt")->required()->check(CLI::ExistingFile);
    add_data_options(d, dist.data);
    d->add_option("--protocol", dist.protocol, "synchronisation protocol")
        ->check(CLI::IsMember({"hardsync", "softsync", "async"}))
        ->capture_default_str();
    d->add_option("--n", dist.n, "n of n-softsync: an update averages floor(learners / n) gradients")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    d->add_option("--batch", dist.batch, "mini-batch per learner (mu; default: the Data layer's)")->check(CLI::PositiveNumber);
    d->add_option("--epochs", dist.epochs, "epochs (gradients covering the training set once)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    d->add_option("--mode", dist.mode, "base: wait for each pull; overlap: compute while pulling")
        ->check(CLI::IsMember({"base", "overlap"}))
        ->capture_default_str();
    d->add_option("--lr-modulation", dist.lr_modulation,
                  "none, average (alpha0/<sigma>, default for softsync) or per-gradient (alpha0/max(sigma,1))")
        ->check(CLI::IsMember({"none", "average", "per-gradient"}));
    d->add_option("--reference-batch", dist.reference_batch, "B of hardsync's alpha0*sqrt(lambda*mu/B) and of the lr schedule")
        ->check(CLI::PositiveNumber);
    d->add_option("--base-lr", dist.base_lr, "alpha0 (overrides the solver's base_lr)")->check(CLI::PositiveNumber);
    d->add_option("--warm-start", dist.warm_start, "start from this snapshot's weights")->check(CLI::ExistingFile);
    d->add_option("--seed", dist.seed, "random seed")->check(CLI::NonNegativeNumber);
    d->add_option("--threads-per-rank", dist.threads, "OpenMP threads of each rank")->check(CLI::PositiveNumber)->capture_default_str();
    d->add_option("--wait-spin", dist.wait_spin, "MPI tests before sleeping while waiting (default 50)")
        ->check(CLI::NonNegativeNumber);
    d->add_option("--wait-sleep-us", dist.wait_sleep_us,
                  "sleep between MPI tests; 0 spins (default: 2000 when the node's ranks x threads exceed its cores, else 20)")
        ->check(CLI::NonNegativeNumber);
    d->add_option("-o,--output", dist.output, "directory for metrics.jsonl, staleness.json and final.rudra")->capture_default_str();
#endif

    CLI11_PARSE(app, argc, argv);
    if (threads > 0) omp_set_num_threads(threads);
    try {
        if (*t) return rudra::tools::run_train(train);
        if (*e) return rudra::tools::run_test(test);
        if (*m) return rudra::tools::run_time(time);
#ifdef RUDRA_HAVE_MPI
        if (*d) return rudra::tools::run_dist(dist, &argc, &argv);
#endif
    } catch (const std::exception& ex) {
        std::fflush(stdout);
        std::fprintf(stderr, "rudra: error: %s\n", ex.what());
        return 1;
    }
    return 0;
}
