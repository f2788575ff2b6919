// rudra train: single-process SGD on a training session (session/training_session.h) with a
// prefetching data thread, per-epoch test accuracy, JSON-lines metrics, progress and resumable
// snapshots.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/batch_stream.h"

#include "base/clock.h"
#include "data/skip_log.h"
#include "kernels/gemm.h"
#include "session/metrics_log.h"
#include "session/run_folder.h"
#include "session/stop_signals.h"
#include "session/training_session.h"
#include "tools/commands.h"
#include "session/progress.h"

namespace rudra::tools {
namespace {

// Records skipped under --bad-image skip since the last call: each named on stderr and in the
// metrics log (the first SkipLog::kKeep of the run; the count goes on every epoch line).
void report_skipped(const data::TrainTest& sets, session::MetricsLog& log) {
    if (!sets.skipped) return;
    for (const std::string& what : sets.skipped->take_fresh()) {
        std::fprintf(stderr, "rudra train: skipped a record (--bad-image skip): %s\n", what.c_str());
        log.write({{"event", "skipped_record"}, {"what", what}});
    }
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;


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

    int64_t iter = 0;
    uint64_t position = 0;
    uint64_t data_seed = spec.seed;  // a resumed run keeps the stream it was drawing from
    if (!o.resume.empty()) {
        const nn::Snapshot s = nn::read_snapshot(o.resume);
        run.restore(s, o.resume, session::TrainingSession::History::Required);
        iter = static_cast<int64_t>(s.iteration);
        position = s.samples_seen;
        if (s.data_seed != spec.seed)
            notes.push_back("resuming with the snapshot's data seed " + std::to_string(s.data_seed));
        data_seed = s.data_seed;
    }

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
                kernels::gemm_backend_name(), out_dir.c_str());
    std::fflush(stdout);
    log.write({{"event", "start"}, {"solver", o.solver}, {"net", solver_spec.net}, {"batch", batch},
               {"max_iter", max_iter}, {"threads", omp_get_max_threads()}, {"seed", data_seed},
               {"train_images", n_train}, {"test_images", sets.test.size()},
               {"learnable_parameters", run.params().learnable_count()}, {"resumed_from", o.resume},
               {"iteration", iter}});

    auto save = [&](int64_t at) {
        const std::string path = session::snapshot_path(out_dir, solver_spec.snapshot_prefix, at);
        nn::write_snapshot(path, run.snapshot(static_cast<uint64_t>(at), position, data_seed));
        log.write({{"event", "snapshot"}, {"iteration", at}, {"path", path}});
        return path;
    };

    session::ProgressBar bar(isatty(STDERR_FILENO) != 0);
    data::Prefetcher prefetch(sets.train, run.train_transform(), batch, data_seed, position, binding.helper_thread,
                              o.data.decode_threads, sets.skipped.get());

    const auto t_start = Clock::now();
    double compute_s_epoch = 0.0, loss_sum_epoch = 0.0, loss_sum_display = 0.0;
    int64_t iters_epoch = 0, iters_display = 0, images_epoch = 0;
    auto t_display = Clock::now();
    const double total_epochs = static_cast<double>(max_iter) * batch / n_train;
    std::string last_snapshot;

    while (iter < max_iter && !session::stop_requested()) {
        const auto t_iter = Clock::now();
        double loss;
        try {
            loss = run.step(prefetch.next(), iter);
        } catch (const session::Diverged& e) {
            bar.clear();
            log.write({{"event", "diverged"}, {"iteration", iter}, {"loss", e.loss()}});
            throw std::runtime_error("training diverged at iteration " + std::to_string(iter) + " (loss " +
                                     std::to_string(e.loss()) + "); lower base_lr");
        }
        ++iter;
        position += batch;
        compute_s_epoch += seconds_since(t_iter);
        loss_sum_epoch += loss;
        loss_sum_display += loss;
        ++iters_epoch;
        ++iters_display;
        images_epoch += batch;

        const double epoch_now = static_cast<double>(position) / n_train;
        const double ips = images_epoch / std::max(compute_s_epoch, 1e-9);
        bar.update(static_cast<long>(iter), static_cast<long>(max_iter), ips / batch, ips, loss_sum_epoch / iters_epoch,
                   static_cast<int>(epoch_now) + 1);
        if (solver_spec.display > 0 && iter % solver_spec.display == 0) {
            const double span = seconds_since(t_display);
            bar.clear();
            std::printf("iter %lld  epoch %.2f  loss %.4f  lr %g  %.0f img/s\n", static_cast<long long>(iter), epoch_now,
                        loss_sum_display / iters_display, run.solver().rate(iter - 1), iters_display * batch / span);
            std::fflush(stdout);
            log.write({{"event", "iter"}, {"iteration", iter}, {"epoch", epoch_now},
                       {"train_loss", loss_sum_display / iters_display}, {"lr", run.solver().rate(iter - 1)},
                       {"images_per_s", iters_display * batch / span}, {"elapsed_s", seconds_since(t_start)}});
            loss_sum_display = 0.0;
            iters_display = 0;
            t_display = Clock::now();
        }
        const bool epoch_end = (position / n_train) != ((position - batch) / n_train) || iter == max_iter;
        if (solver_spec.test_interval > 0 && iter % solver_spec.test_interval == 0 && !epoch_end) {
            const session::EvalResult r = run.evaluate();
            nlohmann::ordered_json line{{"event", "test"}, {"iteration", iter}, {"epoch", epoch_now},
                                        {"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
            session::add_accuracies(line, r);
            line["elapsed_s"] = seconds_since(t_start);
            log.write(line);
        }
        if (epoch_end) {
            const session::EvalResult r = run.evaluate();
            bar.clear();
            const double train_loss = loss_sum_epoch / std::max<int64_t>(iters_epoch, 1);
            std::printf("epoch %.2f/%.2f  train_loss %.4f  test_accuracy %.4f  test_loss %.4f%s  %.0f img/s  elapsed %s\n",
                        epoch_now, total_epochs, train_loss, r.accuracy, r.loss, session::top5_text(r).c_str(), ips,
                        session::format_duration(seconds_since(t_start)).c_str());
            std::fflush(stdout);
            report_skipped(sets, log);
            nlohmann::ordered_json line{{"event", "epoch"},      {"epoch", std::round(epoch_now * 1000) / 1000},
                                        {"iteration", iter},     {"train_loss", train_loss},
                                        {"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
            session::add_accuracies(line, r);
            if (sets.skipped) line["skipped_records"] = sets.skipped->count();
            line["images_per_s"] = ips;
            line["elapsed_s"] = seconds_since(t_start);
            line["lr"] = run.solver().rate(iter - 1);
            log.write(line);
            compute_s_epoch = loss_sum_epoch = 0.0;
            iters_epoch = images_epoch = 0;
        }
        const bool asked = session::take_checkpoint_request();
        if (iter < max_iter && (asked || (solver_spec.snapshot > 0 && iter % solver_spec.snapshot == 0)))
            last_snapshot = save(iter);
    }
    bar.clear();
    last_snapshot = save(iter);
    const bool interrupted = session::stop_requested();
    log.write({{"event", interrupted ? "interrupted" : "end"}, {"iteration", iter},
               {"elapsed_s", seconds_since(t_start)}, {"snapshot", last_snapshot}});
    std::printf("%s at iteration %lld; snapshot %s\n", interrupted ? "interrupted" : "done",
                static_cast<long long>(iter), last_snapshot.c_str());
    return interrupted ? 130 : 0;
}

}  // namespace rudra::tools
