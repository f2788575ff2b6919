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
#include "session/run_loop.h"

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
    run.skip_passes(s.samples_seen / static_cast<uint64_t>(run.batch()));  // its dropout masks go on too
    if (s.data_seed != seed) notes.push_back("resuming with the snapshot's data seed " + std::to_string(s.data_seed));
    config.data_seed = s.data_seed;  // a resumed run keeps the stream it was drawing from
}

namespace {

// `rudra train` on the run loop: a mini-batch per step, the solver's display and test cadence,
// a test pass and an epoch line at each epoch end, snapshots as single-node checkpoints.
class SingleNodeMethod : public RunMethod {
public:
    SingleNodeMethod(TrainingSession& run, const data::TrainTest& sets, const SingleNodeRunConfig& c, MetricsLog& log,
                     const RunDisplay& display)
        : run_(run), sets_(sets), c_(c), log_(log), display_(display), solver_(run.solver_spec()),
          batch_(run.batch()), n_train_(sets.train.size()),
          total_epochs_(static_cast<double>(c.max_iter) * batch_ / n_train_),
          prefetch_(sets.train, run.train_transform(), batch_, c.data_seed, c.start_position, c.on_io_thread_start,
                    c.decode_threads, sets.skipped.get()) {}

    StepDone step(const RunPosition& at, bool) override {
        const auto t_iter = Clock::now();
        double loss;
        try {
            loss = run_.step(prefetch_.next(), at.steps);
        } catch (const Diverged& e) {
            log_.write({{"event", "diverged"}, {"iteration", at.steps}, {"loss", e.loss()}});
            throw std::runtime_error("training diverged at iteration " + std::to_string(at.steps) + " (loss " +
                                     std::to_string(e.loss()) + "); lower base_lr");
        }
        const double step_s = seconds_since(t_iter);
        epoch_.add(loss, step_s);
        shown_.add(loss, step_s);
        images_epoch_ += batch_;
        return {batch_, false};
    }

    void after_step(const RunPosition& at, bool epoch_ends) override {
        const int64_t iter = at.steps;
        const double epoch_now = static_cast<double>(at.samples) / n_train_;
        ips_ = images_epoch_ / std::max(epoch_.compute_s, 1e-9);
        if (display_.progress)
            display_.progress(iter, c_.max_iter, ips_ / batch_, ips_, epoch_.mean_loss(), static_cast<int>(epoch_now) + 1);
        if (solver_.display > 0 && iter % solver_.display == 0) {
            const double span = seconds_since(t_display_);
            if (display_.line)
                display_.line(printed("iter %lld  epoch %.2f  loss %.4f  lr %g  %.0f img/s", static_cast<long long>(iter),
                                      epoch_now, shown_.mean_loss(), run_.solver().rate(iter - 1), shown_.iters * batch_ / span));
            log_.write({{"event", "iter"}, {"iteration", iter}, {"epoch", epoch_now}, {"train_loss", shown_.mean_loss()},
                        {"lr", run_.solver().rate(iter - 1)}, {"images_per_s", shown_.iters * batch_ / span},
                        {"elapsed_s", at.elapsed_s}});
            shown_ = Span();
            t_display_ = Clock::now();
        }
        if (solver_.test_interval > 0 && iter % solver_.test_interval == 0 && !epoch_ends) {
            const EvalResult r = run_.evaluate();
            nlohmann::ordered_json line{{"event", "test"}, {"iteration", iter}, {"epoch", epoch_now},
                                        {"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
            add_accuracies(line, r);
            line["elapsed_s"] = at.elapsed_s;
            log_.write(line);
        }
    }

    bool epoch_end(const RunPosition& at, bool) override {
        const double epoch_now = static_cast<double>(at.samples) / n_train_;
        const EvalResult r = run_.evaluate();
        const double train_loss = epoch_.mean_loss();
        if (display_.line)
            display_.line(printed("epoch %.2f/%.2f  train_loss %.4f  test_accuracy %.4f  test_loss %.4f%s  %.0f img/s  elapsed %s",
                                  epoch_now, total_epochs_, train_loss, r.accuracy, r.loss, top5_text(r).c_str(), ips_,
                                  format_duration(seconds_since(started_)).c_str()));
        report_skipped(sets_, log_);
        nlohmann::ordered_json line{{"event", "epoch"},      {"epoch", std::round(epoch_now * 1000) / 1000},
                                    {"iteration", at.steps}, {"train_loss", train_loss},
                                    {"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
        add_accuracies(line, r);
        if (sets_.skipped) line["skipped_records"] = sets_.skipped->count();
        line["images_per_s"] = ips_;
        line["elapsed_s"] = seconds_since(started_);  // the test pass included
        line["lr"] = run_.solver().rate(at.steps - 1);
        log_.write(line);
        epoch_ = Span();
        images_epoch_ = 0;
        return false;
    }

    bool save(CheckpointWhy why, const RunPosition& at) override {
        const std::string path = snapshot_path(c_.output, solver_.snapshot_prefix, at.steps);
        const auto position = static_cast<uint64_t>(at.samples);
        nn::Snapshot snap = run_.snapshot(static_cast<uint64_t>(at.steps), position, c_.data_seed);
        CheckpointFacts facts;
        facts.method = kSingleNode;
        facts.reason = why == CheckpointWhy::Periodic ? "snapshot" : reason_name(why);  // a solver's `snapshot`
        facts.epoch = static_cast<int64_t>(position / static_cast<uint64_t>(n_train_));
        facts.timed = false;  // the same run writes the same bytes
        facts.settings = c_.settings;
        facts.rule = {{"timestamp", at.steps}, {"samples", position}, {"applied", {at.steps}}};
        snap.metadata = checkpoint_metadata(facts);
        nn::write_snapshot(path, snap);
        log_.write({{"event", "snapshot"}, {"iteration", at.steps}, {"path", path}});
        last_snapshot_ = path;
        return true;
    }

    const std::string& last_snapshot() const { return last_snapshot_; }

private:
    TrainingSession& run_;
    const data::TrainTest& sets_;
    const SingleNodeRunConfig& c_;
    MetricsLog& log_;
    const RunDisplay& display_;
    const nn::SolverSpec& solver_;
    const int batch_;
    const int64_t n_train_;
    const double total_epochs_;
    data::Prefetcher prefetch_;
    const Clock::time_point started_ = Clock::now();
    Clock::time_point t_display_ = Clock::now();
    Span epoch_, shown_;
    int64_t images_epoch_ = 0;
    double ips_ = 0.0;
    std::string last_snapshot_;
};

}  // namespace

SingleNodeRunResult run_single_node(TrainingSession& run, const data::TrainTest& sets, const SingleNodeRunConfig& c,
                                    MetricsLog& log, const RunDisplay& display) {
    SingleNodeMethod method(run, sets, c, log, display);
    RunPlan plan;
    plan.samples_per_epoch = sets.train.size();
    plan.total_steps = c.max_iter;
    plan.start = {c.start_iter, static_cast<int64_t>(c.start_position), 0, 0.0};
    plan.checkpoint_every = {run.solver_spec().snapshot, 0.0, true};
    plan.checkpoint_at_end = true;
    plan.stop_requested = c.stop_requested;
    plan.snapshot_requested = c.snapshot_requested;
    const RunEnd end = run_loop(method, plan);
    SingleNodeRunResult result;
    result.iterations = end.at.steps;
    result.interrupted = end.stopped;
    result.last_snapshot = method.last_snapshot();
    log.write({{"event", result.interrupted ? "interrupted" : "end"}, {"iteration", end.at.steps},
               {"elapsed_s", end.at.elapsed_s}, {"snapshot", result.last_snapshot}});
    return result;
}

}  // namespace rudra::session
