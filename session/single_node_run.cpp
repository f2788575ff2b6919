#include "session/single_node_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "base/clock.h"
#include "data/batch_stream.h"
#include "data/skip_log.h"
#include "session/checkpoint.h"
#include "session/progress.h"

namespace rudra::session {
namespace {

using Clock = std::chrono::steady_clock;

std::string printed(const char* format, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, format, args...);
    return buf;
}

// Records skipped under --bad-image skip since the last call: each named on stderr and in the
// metrics log (the first SkipLog::kKeep of the run; the count goes on every epoch line).
void report_skipped(const data::TrainTest& sets, MetricsLog& log) {
    if (!sets.skipped) return;
    for (const std::string& what : sets.skipped->take_fresh()) {
        std::fprintf(stderr, "rudra train: skipped a record (--bad-image skip): %s\n", what.c_str());
        log.write({{"event", "skipped_record"}, {"what", what}});
    }
}

// The sums of one span of steps: an epoch's, or a display interval's.
struct Span {
    double compute_s = 0.0, loss_sum = 0.0;
    int64_t iters = 0;
    void add(double loss, double seconds) {
        loss_sum += loss;
        compute_s += seconds;
        ++iters;
    }
    double mean_loss() const { return loss_sum / std::max<int64_t>(iters, 1); }
};

}  // namespace

void resume_single_node(TrainingSession& run, const std::string& snapshot, uint64_t seed, SingleNodeRunConfig& config,
                        std::vector<std::string>& notes) {
    const Checkpoint ck = read_checkpoint(snapshot);
    if (!ck.single_node())
        throw std::runtime_error(snapshot + ": a distributed run's checkpoint (" + ck.method() +
                                 "), not a single-node run's: resume it with rudra dist --resume");
    const nn::Snapshot& s = ck.snapshot;
    run.restore(s, snapshot, TrainingSession::History::Required);
    config.start_iter = static_cast<int64_t>(s.iteration);
    config.start_position = s.samples_seen;
    if (s.data_seed != seed) notes.push_back("resuming with the snapshot's data seed " + std::to_string(s.data_seed));
    config.data_seed = s.data_seed;  // a resumed run keeps the stream it was drawing from
}

SingleNodeRunResult run_single_node(TrainingSession& run, const data::TrainTest& sets, const SingleNodeRunConfig& c,
                                    MetricsLog& log, const RunDisplay& display) {
    const nn::SolverSpec& solver = run.solver_spec();
    const int batch = run.batch();
    const int64_t n_train = sets.train.size();
    int64_t iter = c.start_iter;
    uint64_t position = c.start_position;
    SingleNodeRunResult result;
    const auto save = [&](int64_t at, const char* reason) {
        const std::string path = snapshot_path(c.output, solver.snapshot_prefix, at);
        nn::Snapshot snap = run.snapshot(static_cast<uint64_t>(at), position, c.data_seed);
        CheckpointFacts facts;
        facts.method = kSingleNode;
        facts.reason = reason;
        facts.epoch = static_cast<int64_t>(position / static_cast<uint64_t>(n_train));
        facts.timed = false;  // the same run writes the same bytes
        facts.settings = c.settings;
        facts.rule = {{"timestamp", at}, {"samples", position}, {"applied", {at}}};
        snap.metadata = checkpoint_metadata(facts);
        nn::write_snapshot(path, snap);
        log.write({{"event", "snapshot"}, {"iteration", at}, {"path", path}});
        result.last_snapshot = path;
    };
    data::Prefetcher prefetch(sets.train, run.train_transform(), batch, c.data_seed, position, c.on_io_thread_start,
                              c.decode_threads, sets.skipped.get());
    const auto t_start = Clock::now();
    auto t_display = Clock::now();
    Span epoch, shown;
    int64_t images_epoch = 0;
    const double total_epochs = static_cast<double>(c.max_iter) * batch / n_train;
    while (iter < c.max_iter && !(c.stop_requested && c.stop_requested())) {
        const auto t_iter = Clock::now();
        double loss;
        try {
            loss = run.step(prefetch.next(), iter);
        } catch (const Diverged& e) {
            log.write({{"event", "diverged"}, {"iteration", iter}, {"loss", e.loss()}});
            throw std::runtime_error("training diverged at iteration " + std::to_string(iter) + " (loss " +
                                     std::to_string(e.loss()) + "); lower base_lr");
        }
        ++iter;
        position += batch;
        const double step_s = seconds_since(t_iter);
        epoch.add(loss, step_s);
        shown.add(loss, step_s);
        images_epoch += batch;

        const double epoch_now = static_cast<double>(position) / n_train;
        const double ips = images_epoch / std::max(epoch.compute_s, 1e-9);
        if (display.progress) display.progress(iter, c.max_iter, ips / batch, ips, epoch.mean_loss(), static_cast<int>(epoch_now) + 1);
        if (solver.display > 0 && iter % solver.display == 0) {
            const double span = seconds_since(t_display);
            if (display.line)
                display.line(printed("iter %lld  epoch %.2f  loss %.4f  lr %g  %.0f img/s", static_cast<long long>(iter),
                                     epoch_now, shown.mean_loss(), run.solver().rate(iter - 1), shown.iters * batch / span));
            log.write({{"event", "iter"}, {"iteration", iter}, {"epoch", epoch_now}, {"train_loss", shown.mean_loss()},
                       {"lr", run.solver().rate(iter - 1)}, {"images_per_s", shown.iters * batch / span},
                       {"elapsed_s", seconds_since(t_start)}});
            shown = Span();
            t_display = Clock::now();
        }
        const bool epoch_end = (position / n_train) != ((position - batch) / n_train) || iter == c.max_iter;
        if (solver.test_interval > 0 && iter % solver.test_interval == 0 && !epoch_end) {
            const EvalResult r = run.evaluate();
            nlohmann::ordered_json line{{"event", "test"}, {"iteration", iter}, {"epoch", epoch_now},
                                        {"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
            add_accuracies(line, r);
            line["elapsed_s"] = seconds_since(t_start);
            log.write(line);
        }
        if (epoch_end) {
            const EvalResult r = run.evaluate();
            const double train_loss = epoch.mean_loss();
            if (display.line)
                display.line(printed("epoch %.2f/%.2f  train_loss %.4f  test_accuracy %.4f  test_loss %.4f%s  %.0f img/s  elapsed %s",
                                     epoch_now, total_epochs, train_loss, r.accuracy, r.loss, top5_text(r).c_str(), ips,
                                     format_duration(seconds_since(t_start)).c_str()));
            report_skipped(sets, log);
            nlohmann::ordered_json line{{"event", "epoch"},      {"epoch", std::round(epoch_now * 1000) / 1000},
                                        {"iteration", iter},     {"train_loss", train_loss},
                                        {"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
            add_accuracies(line, r);
            if (sets.skipped) line["skipped_records"] = sets.skipped->count();
            line["images_per_s"] = ips;
            line["elapsed_s"] = seconds_since(t_start);
            line["lr"] = run.solver().rate(iter - 1);
            log.write(line);
            epoch = Span();
            images_epoch = 0;
        }
        const bool asked = c.snapshot_requested && c.snapshot_requested();
        if (iter < c.max_iter && (asked || (solver.snapshot > 0 && iter % solver.snapshot == 0)))
            save(iter, asked ? "request" : "snapshot");
    }
    save(iter, iter < c.max_iter ? "signal" : "end");
    result.iterations = iter;
    result.interrupted = iter < c.max_iter;
    log.write({{"event", result.interrupted ? "interrupted" : "end"}, {"iteration", iter},
               {"elapsed_s", seconds_since(t_start)}, {"snapshot", result.last_snapshot}});
    return result;
}

}  // namespace rudra::session
