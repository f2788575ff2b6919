// The `rudra` command: parses the command line (tools/command_line.h) and runs the subcommand.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "kernels/sgemm/sgemm.h"
#include "nn/atomic_file.h"
#include "session/exit_codes.h"
#include "tools/command_line.h"
#ifdef RUDRA_HAVE_MPI
#include "dist/run/replay.h"
#endif

namespace {

// This process's rank when a launcher started it (MPICH's hydra, PMIx, Open MPI, Slurm), else 0.
int rank_in_job() {
    for (const char* name : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
    return 0;
}

// The parsed subcommand; returns the exit code. `argc` and `argv` go to MPI (rudra dist).
int run_command(rudra::tools::CommandLine& cl, int* argc, char*** argv) {
    namespace tools = rudra::tools;
    for (const auto* k : {&cl.train.kernels, &cl.test.kernels, &cl.time.kernels}) k->validate();
    // The ISA gate and the micro-kernel first: a bad RUDRA_ISA or RUDRA_SGEMM_BLOCKS is reported
    // before any work (by `dist` once MPI runs, so that one rank reports it).
    bool dist_command = false;
#ifdef RUDRA_HAVE_MPI
    dist_command = cl.app.got_subcommand("dist");
#endif
    if (!dist_command) rudra::kernels::selected_micro_kernel();
    // --precision: said once, before the work (by `dist` on rank 0).
    for (auto [name, kernels] : {std::pair{"train", &cl.train.kernels}, std::pair{"test", &cl.test.kernels},
                                 std::pair{"time", &cl.time.kernels}})
        if (cl.app.got_subcommand(name))
            if (const std::string note = kernels->resolve_precision(); !note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
    if (cl.app.got_subcommand("train")) return tools::run_train(cl.train);
    if (cl.app.got_subcommand("test")) return tools::run_test(cl.test);
    if (cl.app.got_subcommand("time")) return tools::run_time(cl.time);
    if (cl.app.got_subcommand("bench")) return tools::run_bench(cl.bench);
    if (cl.app.got_subcommand("info")) return tools::run_info(cl.info);
    if (cl.app.got_subcommand("input")) return tools::run_input(cl.input);
    if (cl.app.got_subcommand("convert")) return tools::run_convert(cl.convert);
    if (cl.app.got_subcommand("mean")) return tools::run_mean(cl.mean);
#ifdef RUDRA_HAVE_MPI
    cl.dist.kernels.validate();
    if (cl.app.got_subcommand("dist")) {
        for (const CLI::Option* opt : cl.app.get_subcommand("dist")->get_options())
            if (opt->count() > 0) cl.dist.given.insert(opt->get_name());
        if (!cl.dist.replay.empty()) return rudra::dist::run::run_replay(cl.dist);
        return rudra::dist::run::run_job(cl.dist, argc, argv);
    }
    if (cl.app.got_subcommand("checkpoint")) return tools::run_checkpoint(cl.checkpoint);
#endif
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    rudra::tools::CommandLine cl;
    try {
        cl.app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return cl.app.exit(e);  // --help
        // Under mpiexec every rank parses the same command line: the first one says what is wrong.
        if (rank_in_job() == 0) {
            std::fprintf(stderr, "rudra: error: %s\n", e.what());
            if (dynamic_cast<const CLI::RequiredError*>(&e) || dynamic_cast<const CLI::ExtrasError*>(&e))
                std::fprintf(stderr, "run with --help for the options\n");
        }
        return 1;
    }
    if (cl.threads > 0) omp_set_num_threads(cl.threads);
    try {
        return run_command(cl, &argc, &argv);
    } catch (const rudra::nn::WriteError& ex) {
        std::fflush(stdout);
        std::fprintf(stderr, "rudra: error: %s\n", ex.what());
        return rudra::session::kExitWriteFailed;
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        std::fprintf(stderr, "rudra: error: out of memory (lower --batch, or the data set's size with --train-limit)\n");
        return 1;
    } catch (const std::exception& ex) {
        std::fflush(stdout);
        std::fprintf(stderr, "rudra: error: %s\n", ex.what());
        return 1;
    }
}
