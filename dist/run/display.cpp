#include "dist/run/display.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/clock.h"

namespace rudra::dist::run {
namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

double number(const nlohmann::ordered_json& j, const char* key) { return j.value(key, 0.0); }

}  // namespace

std::string readable_metrics_line(const nlohmann::ordered_json& j, int epochs) {
    const std::string event = j.value("event", "");
    if (event == "epoch") {
        std::string s = "epoch " + std::to_string(j.value("epoch", int64_t{0})) + "/" + std::to_string(epochs) +
                        ": test accuracy " + fixed(number(j, "test_accuracy"), 4) +
                        (j.contains("test_top5") ? ", top-5 " + fixed(number(j, "test_top5"), 4) : std::string()) + " (loss " +
                        fixed(number(j, "test_loss"), 4) + "), train loss " +
                        (j.contains("train_loss") ? fixed(number(j, "train_loss"), 4) : std::string("not reported yet")) + ", " +
                        session::with_thousands(static_cast<uint64_t>(number(j, "images_per_s") + 0.5)) + " images/s, staleness " +
                        fixed(number(j, "staleness_mean"), 2) + " (max " +
                        std::to_string(j.value("staleness_max", int64_t{0})) + "), overlap " +
                        fixed(number(j, "overlap_ratio"), 2);
        if (j.contains("dropped")) s += ", " + std::to_string(j.value("dropped", int64_t{0})) + " gradients dropped";
        if (j.contains("spread")) s += ", spread " + fixed(number(j, "spread"), 4);
        return s + ", " + session::format_duration(number(j, "elapsed_s")) + " elapsed";
    }
    if (event == "learner_lost")
        return "learner rank " + std::to_string(j.value("rank", int64_t{0})) + " lost at " +
               fixed(number(j, "elapsed_s"), 1) + " s (silent " + fixed(number(j, "silent_s"), 1) + " s); " +
               (j.value("stops_run", false) ? std::string("the run stops")
                                            : std::to_string(j.value("live_learners", int64_t{0})) + " learners go on");
    if (event == "stopped")
        return "stopped (" + j.value("reason", std::string("?")) + ") after " +
               std::to_string(j.value("epochs_done", int64_t{0})) + " epochs, update " +
               std::to_string(j.value("updates", int64_t{0})) + ", " + fixed(number(j, "elapsed_s"), 1) + " s";
    return j.dump();
}

DistDisplay::DistDisplay(const DistOptions& o, int64_t samples_per_epoch, int batch, int64_t start_samples)
    : json_(o.json),
      lines_(o.progress == "lines" || (o.progress == "auto" && !isatty(STDERR_FILENO))),
      epochs_(o.epochs),
      batch_(batch),
      samples_per_epoch_(samples_per_epoch > 0 ? samples_per_epoch : 1),
      start_samples_(start_samples),
      bar_(o.progress == "bar" || (o.progress == "auto" && isatty(STDERR_FILENO))),
      started_(std::chrono::steady_clock::now()),
      last_line_(started_) {}

void DistDisplay::metrics_line(const nlohmann::ordered_json& line) {
    bar_.clear();
    const std::string text = json_ ? line.dump() : readable_metrics_line(line, epochs_);
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    const std::string event = line.value("event", "");
    if (event == "stopped" || (event == "epoch" && line.value("epoch", int64_t{0}) >= epochs_)) over_ = true;
}

void DistDisplay::learners_report(int64_t minibatches, double loss) {
    if (over_) return;  // the learners' last reports
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = seconds_between(started_, now);
    const int64_t trained = minibatches * batch_;
    // The learners compute ahead of the updates (under adv*, sums of many gradients wait to go
    // up): the line never counts past the run's last image.
    const int64_t samples = std::min(start_samples_ + trained, int64_t{epochs_} * samples_per_epoch_);
    const int epoch = std::min(static_cast<int>(samples / samples_per_epoch_) + 1, std::max(epochs_, 1));
    const int64_t done = samples - int64_t{epoch - 1} * samples_per_epoch_;
    const double images_per_s = elapsed > 0 ? static_cast<double>(trained) / elapsed : 0.0;
    if (bar_.enabled()) {
        bar_.update(static_cast<long>(done), static_cast<long>(samples_per_epoch_), images_per_s,
                    images_per_s, loss, epoch);
    } else if (lines_ && now - last_line_ >= std::chrono::seconds(30)) {
        last_line_ = now;
        const double eta = images_per_s > 0 ? static_cast<double>(samples_per_epoch_ - done) / images_per_s : -1;
        std::printf("epoch %d: %.0f%% (%s of %s images), %s images/s, train loss %.4f, epoch ends in %s\n", epoch,
                    100.0 * static_cast<double>(done) / static_cast<double>(samples_per_epoch_),
                    session::with_thousands(static_cast<uint64_t>(done)).c_str(),
                    session::with_thousands(static_cast<uint64_t>(samples_per_epoch_)).c_str(),
                    session::with_thousands(static_cast<uint64_t>(images_per_s + 0.5)).c_str(), loss,
                    session::format_duration(eta).c_str());
        std::fflush(stdout);
    }
}

}  // namespace rudra::dist::run
