// rudra train: single-process SGD on the nn engine with a prefetching data thread, per-epoch
// test accuracy, JSON-lines metrics and resumable snapshots.
#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/batch_stream.h"
#include "kernels/gemm.h"
#include "nn/snapshot.h"
#include "nn/solver.h"
#include "tools/commands.h"
#include "tools/metrics_log.h"
#include "tools/progress.h"

namespace rudra::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Set by SIGINT/SIGTERM: the loop finishes its step, writes a snapshot and stops.
std::atomic<bool> g_stop_requested{false};
extern "C" void on_stop_signal(int) { g_stop_requested = true; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string snapshot_path(const std::string& dir, const std::string& prefix, int64_t iter) {
    std::string base = prefix.empty() ? "snapshot" : fs::path(prefix).filename().string();
    if (base.empty()) base = "snapshot";
    return (fs::path(dir) / (base + "_iter_" + std::to_string(iter) + ".rudra")).string();
}

void print_notes(const std::vector<std::string>& notes) {
    for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
}

}  // namespace

int run_train(const TrainOptions& o) {
    // First, so that every buffer is first touched by pinned threads on their NUMA domain.
    const Binding binding = bind_threads(o.bind, 1, 0, omp_get_max_threads());
    const std::string& placed = binding.message;
    nn::SolverSpec solver_spec = nn::load_solver_spec(o.solver);
    nn::NetSpec net_spec = nn::load_net_spec(solver_spec.net);
    const nn::LayerSpec* data_layer = net_spec.data_layer(nn::Phase::Train);
    if (!data_layer) throw std::runtime_error(solver_spec.net + ": the net has no Data layer for phase TRAIN");
    const nn::LayerSpec* test_layer = net_spec.data_layer(nn::Phase::Test);

    data::TrainTest sets = load_data(o.data);
    std::vector<std::string> notes = solver_spec.notes;
    notes.insert(notes.end(), net_spec.notes.begin(), net_spec.notes.end());
    if (!placed.empty()) notes.push_back("placement: " + placed);
    std::vector<float> mean;
    data::Transform train_tf = make_transform(data_layer->transform, sets.train, mean, notes);
    data::Transform test_tf =
        test_layer ? make_transform(test_layer->transform, sets.train, mean, notes) : train_tf;

    const uint64_t seed = o.seed >= 0 ? o.seed : (solver_spec.random_seed >= 0 ? solver_spec.random_seed : 1);
    nn::NetOptions train_opt;
    train_opt.kernels = o.kernels;
    train_opt.phase = nn::Phase::Train;
    train_opt.batch = o.batch;
    train_opt.data_chw = {sets.train.channels, sets.train.height, sets.train.width};
    train_opt.seed = seed;
    nn::Net train_net(net_spec, train_opt);
    nn::NetOptions test_opt = train_opt;
    test_opt.phase = nn::Phase::Test;
    test_opt.batch = test_layer ? 0 : train_net.batch();
    nn::Net test_net(net_spec, test_opt, &train_net.params());
    if (!train_net.input_label()) throw std::runtime_error(solver_spec.net + ": the TRAIN Data layer has no label top");
    if (train_net.input_data().count() / train_net.batch() !=
        static_cast<int64_t>(sets.train.channels) * train_tf.out_h(sets.train) * train_tf.out_w(sets.train))
        throw std::runtime_error("data set and net input shapes differ");

    nn::ParamStore& params = train_net.params();
    nn::Solver solver(solver_spec, params);
    params.fill(seed);

    const int batch = train_net.batch();
    const int64_t n_train = sets.train.size();
    int64_t max_iter = solver_spec.max_iter;
    if (o.epochs > 0) max_iter = static_cast<int64_t>(std::ceil(o.epochs * n_train / batch));
    if (max_iter <= 0) throw std::runtime_error(o.solver + ": set max_iter in the solver or give --epochs");

    int64_t iter = 0;
    uint64_t position = 0;
    uint64_t data_seed = seed;  // a resumed run keeps the stream it was drawing from
    if (!o.resume.empty()) {
        nn::Snapshot s = nn::read_snapshot(o.resume);
        if (s.layout_hash != params.layout_hash() || s.params.size() != params.size())
            throw std::runtime_error(o.resume + ": the snapshot's parameters do not match net " + solver_spec.net);
        if (s.history.size() != solver.history_size() || s.solver_type != static_cast<uint32_t>(solver_spec.type))
            throw std::runtime_error(o.resume + ": the snapshot was taken with a different solver type");
        std::copy(s.params.begin(), s.params.end(), params.values());
        std::copy(s.history.begin(), s.history.end(), solver.history());
        iter = static_cast<int64_t>(s.iteration);
        position = s.samples_seen;
        if (s.data_seed != seed)
            notes.push_back("resuming with the snapshot's data seed " + std::to_string(s.data_seed));
        data_seed = s.data_seed;
    }

    // From here on an interruption ends the run with a snapshot instead of killing it.
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    const std::string out_dir = o.output.empty() ? "rudra-run" : o.output;
    fs::create_directories(out_dir);
    MetricsLog log((fs::path(out_dir) / "metrics.jsonl").string(), !o.resume.empty());
    if (solver_spec.test_iter > 0)
        notes.push_back(o.solver + ": test_iter " + std::to_string(solver_spec.test_iter) +
                        " not used: every test covers the whole test set");
    print_notes(notes);
    std::printf("rudra train: %s, net %s (%s learnable parameters), %s: %lld train / %lld test images %dx%dx%d\n",
                o.solver.c_str(), solver_spec.net.c_str(), with_thousands(params.learnable_count()).c_str(),
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
               {"learnable_parameters", params.learnable_count()}, {"resumed_from", o.resume},
               {"iteration", iter}});

    auto save = [&](int64_t at) {
        nn::Snapshot s;
        s.iteration = static_cast<uint64_t>(at);
        s.samples_seen = position;
        s.data_seed = data_seed;
        s.layout_hash = params.layout_hash();
        s.solver_type = static_cast<uint32_t>(solver_spec.type);
        s.params.assign(params.values(), params.values() + params.size());
        s.history.assign(solver.history(), solver.history() + solver.history_size());
        const std::string path = snapshot_path(out_dir, solver_spec.snapshot_prefix, at);
        nn::write_snapshot(path, s);
        log.write({{"event", "snapshot"}, {"iteration", at}, {"path", path}});
        return path;
    };

    ProgressBar bar(isatty(STDERR_FILENO) != 0);
    data::Prefetcher prefetch(sets.train, train_tf, batch, data_seed, position, binding.helper_thread);
    nn::Blob& x = train_net.input_data();
    nn::Blob& y = *train_net.input_label();

    const auto t_start = Clock::now();
    double compute_s_epoch = 0.0, loss_sum_epoch = 0.0, loss_sum_display = 0.0;
    int64_t iters_epoch = 0, iters_display = 0, images_epoch = 0;
    auto t_display = Clock::now();
    const double total_epochs = static_cast<double>(max_iter) * batch / n_train;
    std::string last_snapshot;

    while (iter < max_iter && !g_stop_requested) {
        const auto t_iter = Clock::now();
        const data::Batch& b = prefetch.next();
        std::memcpy(x.data, b.data.data(), sizeof(float) * x.count());
        std::memcpy(y.data, b.labels.data(), sizeof(float) * y.count());
        params.zero_grads();
        const float loss = train_net.forward();
        if (!std::isfinite(loss)) {
            bar.clear();
            log.write({{"event", "diverged"}, {"iteration", iter}, {"loss", loss}});
            throw std::runtime_error("training diverged at iteration " + std::to_string(iter) + " (loss " +
                                     std::to_string(loss) + "); lower base_lr");
        }
        train_net.backward();
        solver.apply(params.grads(), iter);
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
                        loss_sum_display / iters_display, solver.rate(iter - 1), iters_display * batch / span);
            std::fflush(stdout);
            log.write({{"event", "iter"}, {"iteration", iter}, {"epoch", epoch_now},
                       {"train_loss", loss_sum_display / iters_display}, {"lr", solver.rate(iter - 1)},
                       {"images_per_s", iters_display * batch / span}, {"elapsed_s", seconds_since(t_start)}});
            loss_sum_display = 0.0;
            iters_display = 0;
            t_display = Clock::now();
        }
        const bool epoch_end = (position / n_train) != ((position - batch) / n_train) || iter == max_iter;
        if (solver_spec.test_interval > 0 && iter % solver_spec.test_interval == 0 && !epoch_end) {
            EvalResult r = evaluate(test_net, sets.test, test_tf);
            log.write({{"event", "test"}, {"iteration", iter}, {"epoch", epoch_now}, {"test_accuracy", r.accuracy},
                       {"test_loss", r.loss}, {"elapsed_s", seconds_since(t_start)}});
        }
        if (epoch_end) {
            EvalResult r = evaluate(test_net, sets.test, test_tf);
            bar.clear();
            const double train_loss = loss_sum_epoch / std::max<int64_t>(iters_epoch, 1);
            std::printf("epoch %.2f/%.2f  train_loss %.4f  test_accuracy %.4f  test_loss %.4f  %.0f img/s  elapsed %s\n",
                        epoch_now, total_epochs, train_loss, r.accuracy, r.loss, ips,
                        format_duration(seconds_since(t_start)).c_str());
            std::fflush(stdout);
            log.write({{"event", "epoch"}, {"epoch", std::round(epoch_now * 1000) / 1000}, {"iteration", iter},
                       {"train_loss", train_loss}, {"test_accuracy", r.accuracy}, {"test_loss", r.loss},
                       {"images_per_s", ips}, {"elapsed_s", seconds_since(t_start)}, {"lr", solver.rate(iter - 1)}});
            compute_s_epoch = loss_sum_epoch = 0.0;
            iters_epoch = images_epoch = 0;
        }
        if (solver_spec.snapshot > 0 && iter % solver_spec.snapshot == 0 && iter < max_iter) last_snapshot = save(iter);
    }
    bar.clear();
    last_snapshot = save(iter);
    const bool interrupted = g_stop_requested;
    log.write({{"event", interrupted ? "interrupted" : "end"}, {"iteration", iter},
               {"elapsed_s", seconds_since(t_start)}, {"snapshot", last_snapshot}});
    std::printf("%s at iteration %lld; snapshot %s\n", interrupted ? "interrupted" : "done",
                static_cast<long long>(iter), last_snapshot.c_str());
    return interrupted ? 130 : 0;
}

}  // namespace rudra::tools
