// rudra train: the command line of a single-node run (session/single_node_run.h): the output
// folder, the session and data set, resume, the start lines, and the display of progress.
#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "session/exit_codes.h"
#include "session/metrics_log.h"
#include "session/progress.h"
#include "session/run_folder.h"
#include "session/single_node_run.h"
#include "session/stop_signals.h"
#include "session/training_session.h"
#include "tools/commands.h"

namespace rudra::tools {
namespace {

namespace fs = std::filesystem;

void print_notes(const std::vector<std::string>& notes) {
    for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
}

}  // namespace

int run_train(const TrainOptions& o) {
    // The output folder first: one that holds another run, or that a live run holds, is refused
    // before anything is loaded.
    const std::string out_dir = o.output.empty() ? "rudra-run" : o.output;
    const session::RunFolder folder(out_dir,
                                    !o.resume.empty() ? session::RunFolder::Start::Resume
                                    : o.overwrite     ? session::RunFolder::Start::Overwrite
                                                      : session::RunFolder::Start::Fresh,
                                    "--resume with one of its .rudra snapshots");
    // First, so that every buffer is first touched by pinned threads on their NUMA domain.
    const Binding binding = bind_threads(o.bind, 1, 0, omp_get_max_threads());
    session::SessionSpec spec;
    spec.solver = nn::load_solver_spec(o.solver);
    spec.net = nn::load_net_spec(spec.solver.net);
    spec.kernels = o.kernels;
    spec.batch = o.batch;
    spec.seed = o.seed >= 0 ? o.seed : (spec.solver.random_seed >= 0 ? spec.solver.random_seed : 1);
    const data::TrainTest sets = session::load_data(o.data, spec.net);
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = true, .solver = true});
    const nn::SolverSpec& solver_spec = run.solver_spec();
    std::vector<std::string> notes = run.notes();
    if (!binding.message.empty()) notes.push_back("placement: " + binding.message);

    const int batch = run.batch();
    const int64_t n_train = sets.train.size();
    int64_t max_iter = solver_spec.max_iter;
    if (o.epochs > 0) max_iter = static_cast<int64_t>(std::ceil(o.epochs * n_train / batch));
    if (max_iter <= 0) throw std::runtime_error(o.solver + ": set max_iter in the solver or give --epochs");

    session::SingleNodeRunConfig rc;
    rc.output = out_dir;
    rc.max_iter = max_iter;
    rc.data_seed = spec.seed;
    rc.decode_threads = o.data.decode_threads;
    rc.on_io_thread_start = binding.helper_thread;
    rc.stop_requested = session::stop_requested;
    rc.snapshot_requested = session::take_checkpoint_request;
    rc.settings = {{"solver", o.solver},          {"data", o.data.dir},   {"format", o.data.format},
                   {"train_limit", o.data.train_limit}, {"test_limit", o.data.test_limit}, {"batch", batch},
                   {"max_iter", max_iter},        {"seed", spec.seed},   {"learners", 1}};
    if (!o.resume.empty()) session::resume_single_node(run, o.resume, spec.seed, rc, notes);

    // From here on a stop signal ends the run with a snapshot instead of killing it: the loop
    // finishes its step first. SIGUSR1 writes a snapshot and goes on.
    session::install_stop_signals();
    session::MetricsLog log((fs::path(out_dir) / "metrics.jsonl").string(), !o.resume.empty());
    if (solver_spec.test_iter > 0)
        notes.push_back(o.solver + ": test_iter " + std::to_string(solver_spec.test_iter) +
                        " not used: every test covers the whole test set");
    print_notes(notes);
    std::printf("rudra train: %s, net %s (%s learnable parameters), %s: %lld train / %lld test images %dx%dx%d\n",
                o.solver.c_str(), solver_spec.net.c_str(), session::with_thousands(run.params().learnable_count()).c_str(),
                sets.format.c_str(), static_cast<long long>(n_train), static_cast<long long>(sets.test.size()),
                sets.train.channels, sets.train.height, sets.train.width);
    std::printf("mini-batch %d, %lld iterations (%.2f epochs), solver %s, base_lr %g, %d threads, gemm %s, output %s\n",
                batch, static_cast<long long>(max_iter), static_cast<double>(max_iter) * batch / n_train,
                nn::solver_type_name(solver_spec.type), solver_spec.lr.base_lr, omp_get_max_threads(),
                kernels::gemm_backend_name(o.kernels.bf16 ? kernels::GemmBackend::OwnBf16 : kernels::GemmBackend::Own),
                out_dir.c_str());
    std::fflush(stdout);
    log.write({{"event", "start"}, {"solver", o.solver}, {"net", solver_spec.net}, {"batch", batch},
               {"max_iter", max_iter}, {"threads", omp_get_max_threads()}, {"seed", rc.data_seed},
               {"train_images", n_train}, {"test_images", sets.test.size()},
               {"learnable_parameters", run.params().learnable_count()}, {"resumed_from", o.resume},
               {"iteration", rc.start_iter}, {"precision", o.kernels.bf16 ? "bf16" : "fp32"}});

    session::ProgressBar bar(isatty(STDERR_FILENO) != 0);
    session::RunDisplay display;
    display.progress = [&bar](int64_t done, int64_t total, double iters_per_s, double images_per_s, double loss,
                              int epoch) {
        bar.update(static_cast<long>(done), static_cast<long>(total), iters_per_s, images_per_s, loss, epoch);
    };
    display.line = [&bar](const std::string& line) {
        bar.clear();
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    };
    session::SingleNodeRunResult r;
    try {
        r = session::run_single_node(run, sets, rc, log, display);
    } catch (...) {
        bar.clear();
        throw;
    }
    bar.clear();
    std::printf("%s at iteration %lld; snapshot %s\n", r.interrupted ? "interrupted" : "done",
                static_cast<long long>(r.iterations), r.last_snapshot.c_str());
    return r.interrupted ? session::kExitStopped : 0;
}

}  // namespace rudra::tools
