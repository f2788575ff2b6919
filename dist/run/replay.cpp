// `rudra dist --replay RUN`: a parameter-server run computed again in one process, from the
// schedule its PS recorded (dist/ps/schedule_record.h). Each learner is a session of its own, with
// its seed and its sample stream as in the run; each recorded gradient is computed by its learner,
// on the weights of the version it names, from the next mini-batch of that learner's stream, and
// fed to the update rule in the recorded order. With the same kernels and threads, the final
// weights are the run's, bit for bit, whatever the protocol's timing made of it.
#include "dist/run/replay.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/clock.h"
#include "dist/ps/schedule_record.h"
#include "dist/ps/update_rule.h"
#include "dist/run/checkpoint.h"
#include "dist/run/methods.h"
#include "dist/run/roles.h"
#include "nn/atomic_file.h"
#include "session/metrics_log.h"
#include "session/run_folder.h"
#include "session/training_session.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

namespace {

// A learner of the replay: its own nets (its dropout stream) and sample stream, as in the run.
struct ReplayLearner {
    ReplayLearner(const Setup& s, const data::TrainTest& sets, int index, int decode_threads)
        : run(spec_of(s, index), sets, {.train_net = true, .test_net = false, .solver = false}),
          stream(sets.train, run.train_transform(), run.batch(), sample_stream_seed(s.spec.seed, kFirstLearner + index),
                 0, {}, decode_threads, sets.skipped.get()) {}
    static session::SessionSpec spec_of(const Setup& s, int index) {
        session::SessionSpec spec = s.spec;
        spec.seed = s.spec.seed + static_cast<uint64_t>(kFirstLearner + index);  // as a learner's session
        return spec;
    }
    session::TrainingSession run;
    data::Prefetcher stream;
};

// The statistics server's epoch lines, from the replay: at each epoch's end the PS's weights are
// evaluated on the test set. Elapsed time is the record's (a virtual cluster's simulated time)
// where it has one, else the replay's own.
class EpochLines {
public:
    EpochLines(const DistOptions& o, const Setup& s, const data::TrainTest& sets, const dist::Protocol& protocol,
               const std::string& record, bool simulated)
        : test_(s.spec, sets, {.train_net = false, .test_net = true, .solver = false}),
          log_((fs::path(o.output) / "metrics.jsonl").string(), false),
          protocol_(protocol.name()),
          epoch_samples_(static_cast<int64_t>(sets.train.size())),
          epochs_(o.epochs),
          started_(std::chrono::steady_clock::now()),
          next_(s.start_samples / std::max<int64_t>(1, epoch_samples_) + 1) {
        nlohmann::ordered_json start = start_line("start", o, s, sets, protocol.learners());
        start[simulated ? "virtual_cluster" : "replay_of"] = record;
        log_.write(start);
    }
    // The last epoch has ended: a real run's PS takes no gradient after it.
    bool ended() const { return next_ > epochs_; }
    void loss(double l) {
        loss_sum_ += l;
        ++losses_;
    }
    // After each update: the lines of the epochs it ended.
    void after_update(UpdateRule& rule, const nn::ParamStore& weights, double time_s) {
        if (time_s >= 0) last_time_s_ = time_s;
        while (next_ <= epochs_ && rule.samples() >= next_ * epoch_samples_) {
            std::memcpy(test_.params().values(), weights.values(), sizeof(float) * weights.size());
            const session::EvalResult r = test_.evaluate();
            double mean = 0;
            int64_t max = 0, dropped = 0;
            rule.staleness().take_epoch(mean, max, dropped);
            const double elapsed = last_time_s_ >= 0 ? last_time_s_ : seconds_since(started_);
            nlohmann::ordered_json line{{"event", "epoch"},
                                        {"protocol", protocol_},
                                        {"epoch", next_},
                                        {"train_loss", losses_ ? loss_sum_ / static_cast<double>(losses_) : 0.0},
                                        {"test_accuracy", r.accuracy},
                                        {"test_loss", r.loss},
                                        {"elapsed_s", elapsed},
                                        {"updates", rule.timestamp()},
                                        {"samples", rule.samples()},
                                        {"staleness_mean", mean},
                                        {"staleness_max", max}};
            if (rule.drops_gradients()) line["dropped"] = dropped;
            if (elapsed > last_elapsed_)
                line["images_per_s"] = static_cast<double>(rule.samples() - last_samples_) / (elapsed - last_elapsed_);
            if (r.top5 >= 0) line["test_top5"] = r.top5;
            log_.write(line);
            std::printf("epoch %lld/%d: test accuracy %.4f (loss %.4f), train loss %.4f, staleness %.2f (max %lld), "
                        "%.1f s%s\n",
                        static_cast<long long>(next_), epochs_, r.accuracy, r.loss,
                        losses_ ? loss_sum_ / static_cast<double>(losses_) : 0.0, mean, static_cast<long long>(max),
                        elapsed, last_time_s_ >= 0 ? " simulated" : "");
            std::fflush(stdout);
            loss_sum_ = 0;
            losses_ = 0;
            last_elapsed_ = elapsed;
            last_samples_ = rule.samples();
            ++next_;
        }
    }

private:
    session::TrainingSession test_;
    session::MetricsLog log_;
    std::string protocol_;
    int64_t epoch_samples_;
    int epochs_;
    std::chrono::steady_clock::time_point started_;
    int64_t next_, last_samples_ = 0;
    double loss_sum_ = 0, last_elapsed_ = 0, last_time_s_ = -1;
    int64_t losses_ = 0;
};

// The recorded gradients, computed ahead of their turn and side by side where the run's learners
// computed with one thread each (the bits depend on the threads, not on which core): a learner's
// next gradient starts as soon as the weights version it needs exists and its previous one has
// been taken, on as many cores as the machine has. The rule still takes them in the record's order.
class ComputedAhead {
public:
    ComputedAhead(const std::vector<ScheduleEvent>& events, int learners, int threads,
                  std::function<ReplayLearner&(int)> learner)
        : events_(events), learner_(std::move(learner)), next_(static_cast<size_t>(learners)),
          running_(static_cast<size_t>(learners)),
          workers_(threads == 1 ? std::max(1, static_cast<int>(std::thread::hardware_concurrency())) : 0),
          threads_(threads) {
        for (size_t i = 0; i < events.size(); ++i)
            if (events[i].kind == ScheduleEvent::Kind::Gradient) next_[static_cast<size_t>(events[i].learner)].push_back(i);
    }
    ~ComputedAhead() {
        for (auto& f : running_)
            if (f.valid()) f.wait();
    }
    ReplayLearner& learner(int l) { return learner_(l); }
    // The loss of event i's gradient (then in its learner's gradient buffer until the next call for
    // that learner), computed on `weights` unless it was started ahead.
    double take(size_t i, const float* weights) {
        const auto l = static_cast<size_t>(events_[i].learner);
        if (next_[l].empty() || next_[l].front() != i) throw std::logic_error("replay: gradients taken out of order");
        if (!running_[l].valid()) start(l, weights);
        next_[l].pop_front();
        --in_flight_;
        return running_[l].get();
    }
    // Starts the gradients of the events from `from` on (a window ahead) whose weights exist.
    void start_ready(size_t from, const std::function<const float*(int64_t)>& weights_of) {
        for (size_t j = from; j < events_.size() && j < from + 4 * static_cast<size_t>(workers_) && in_flight_ < workers_;
             ++j) {
            const ScheduleEvent& e = events_[j];
            if (e.kind != ScheduleEvent::Kind::Gradient) continue;
            const auto l = static_cast<size_t>(e.learner);
            if (running_[l].valid() || next_[l].empty() || next_[l].front() != j) continue;
            if (const float* w = weights_of(e.version)) start(l, w);
        }
    }

private:
    void start(size_t l, const float* weights) {
        ReplayLearner& learner = learner_(static_cast<int>(l));  // built here, on this thread
        const int threads = threads_;
        running_[l] = std::async(std::launch::async, [&learner, weights, threads] {
            omp_set_num_threads(threads);
            nn::ParamStore& p = learner.run.params();
            std::memcpy(p.values(), weights, sizeof(float) * p.size());
            return learner.run.compute_gradient(learner.stream.next());
        });
        ++in_flight_;
    }

    const std::vector<ScheduleEvent>& events_;
    std::function<ReplayLearner&(int)> learner_;
    std::vector<std::deque<size_t>> next_;  // each learner's gradient events not yet taken
    std::vector<std::future<double>> running_;
    int workers_, threads_, in_flight_ = 0;
};

std::string record_file(const std::string& file_or_dir) {
    if (!fs::is_directory(file_or_dir)) return file_or_dir;
    const std::string path = dist::schedule_path(file_or_dir);
    if (!fs::exists(path))
        throw std::runtime_error(path + ": no schedule record there (the PS records one for --topology base runs of "
                                        "the PS protocols that were not resumed)");
    return path;
}

// Relative paths in the settings were relative to the folder the run started in.
void check_paths_from_here(const DistOptions& o, const nlohmann::json& header, const std::string& path) {
    const std::string started_in = header.value("cwd", std::string());
    std::error_code ec;
    if (started_in.empty() || fs::equivalent(started_in, fs::current_path(), ec)) return;
    for (const std::string& file : {o.solver, o.data.dir, o.warm_start})
        if (!file.empty() && fs::path(file).is_relative() && !fs::exists(file))
            throw std::runtime_error(file + " not found from here: the run named it relative to " + started_in +
                                     ", where it started; run the replay there (" + path + ")");
}

void refuse_other_options(const DistOptions& o) {
    for (const std::string& opt : o.given)
        if (opt != "--replay" && opt != "--output" && opt != "--overwrite")
            throw std::runtime_error(opt + " does not go with --replay: a replay takes the recorded run's settings "
                                           "(only -o/--output and --overwrite may be given)");
}

template <class T>
T header_field(const nlohmann::json& header, const char* key, const std::string& path) {
    if (!header.contains(key)) throw std::runtime_error(path + ":1: the header has no \"" + key + "\"");
    try {
        return header.at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path + ":1: the header's \"" + key + "\" is unusable: " + e.what());
    }
}

bool same_bytes(const std::string& a, const std::string& b) {
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    return fa && fb &&
           std::string(std::istreambuf_iterator<char>(fa), {}) == std::string(std::istreambuf_iterator<char>(fb), {});
}

}  // namespace

int run_replay(const DistOptions& options) {
    refuse_other_options(options);
    const std::string path = record_file(options.replay);
    const ScheduleRecord::Read rec = ScheduleRecord::read(path);
    DistOptions o = options;
    const auto settings = header_field<nlohmann::json>(rec.header, "settings", path);
    if (!settings.is_object()) throw std::runtime_error(path + ":1: the header's \"settings\" is not an object");
    apply_recorded_settings(o, settings, path);
    check_paths_from_here(o, rec.header, path);
    const fs::path run_dir = fs::path(path).parent_path();
    if (!o.given.count("--output")) o.output = (run_dir / "replay").string();
    const int threads = header_field<int>(rec.header, "threads", path);
    o.kernels.conv = header_field<std::string>(rec.header, "conv_backend", path);
    // A virtual cluster's record (simulated times) names no sgemm: its gradients are first computed here.
    const bool simulated = rec.header.contains("simulated");
    const std::string recorded_sgemm = simulated ? std::string() : header_field<std::string>(rec.header, "sgemm", path);
    if (threads < 1) throw std::runtime_error(path + ":1: \"threads\" must be at least 1");
    if (o.kernels.conv == "auto")
        throw std::runtime_error(path + ": the run chose its convolution kernels by measuring them (--conv-backend "
                                        "auto), which a replay cannot repeat: replay runs of own, blis or onednn");
    o.kernels.validate();
    const int lambda = rec.record.learners();
    const dist::Protocol protocol = dist::Protocol::parse(o.protocol, lambda, o.n, o.backup, o.k);
    if (protocol.elastic() || dist::Protocol::is_decentralized(protocol.kind()))
        throw std::runtime_error(path + ": " + protocol.name() + " is not replayed: its learners keep models of their own");
    const std::string sgemm = sgemm_identity();
    if (!simulated && recorded_sgemm != sgemm)
        say("rudra dist --replay: warning: the run's learners computed with sgemm " + recorded_sgemm + ", this process " +
            "with " + sgemm + ": the sums may be ordered otherwise, and the weights differ in their last bits");

    omp_set_num_threads(threads);
    Setup s = read_setup(o);
    const data::TrainTest sets = session::load_data(session::plan_data(o.data, s.spec.net), o.data);
    // A virtual cluster's outputs go beside its record; a run's own files are never replaced.
    std::error_code ec;
    const bool into_record_folder = fs::equivalent(o.output, run_dir, ec);
    if (into_record_folder && !simulated)
        throw std::runtime_error("-o " + o.output + " is the recorded run's own folder: give the replay another");
    session::RunFolder folder(o.output,
                              into_record_folder ? session::RunFolder::Start::Resume
                              : o.overwrite      ? session::RunFolder::Start::Overwrite
                                                 : session::RunFolder::Start::Fresh,
                              "");
    EpochLines epochs(o, s, sets, protocol, path, simulated);
    session::SessionSpec ps_spec = s.spec;
    ps_spec.kernels.conv = "own";
    session::TrainingSession ps(ps_spec, sets, {.train_net = true, .test_net = false, .solver = true});
    if (!o.warm_start.empty()) ps.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    nn::ParamStore& params = ps.params();
    dist::UpdateRule rule(protocol, ps.solver(), params, lambda, rule_config(o, s, protocol, ps.batch()));

    const std::vector<ScheduleEvent>& events = rec.record.events();
    std::printf("rudra dist --replay %s: %s, %d learners, mini-batch %d, %zu gradients; %d thread(s), sgemm %s; "
                "output %s\n",
                path.c_str(), protocol.name().c_str(), lambda, ps.batch(), rec.record.gradients(), threads,
                sgemm.c_str(), o.output.c_str());
    std::fflush(stdout);

    // The weights versions still to be computed on, each kept until its last gradient.
    std::unordered_map<int64_t, size_t> last_use;
    for (size_t i = 0; i < events.size(); ++i)
        if (events[i].kind == ScheduleEvent::Kind::Gradient) last_use[events[i].version] = i;
    std::map<int64_t, std::vector<float>> versions;
    const auto keep_version = [&] {
        if (last_use.count(rule.timestamp()))
            versions[rule.timestamp()].assign(params.values(), params.values() + params.size());
    };
    keep_version();
    std::vector<std::unique_ptr<ReplayLearner>> learners(static_cast<size_t>(lambda));
    ComputedAhead ahead(events, lambda, threads, [&](int l) -> ReplayLearner& {
        auto& learner = learners[static_cast<size_t>(l)];
        if (!learner) learner = std::make_unique<ReplayLearner>(s, sets, l, o.data.decode_threads);
        return *learner;
    });
    const auto started = std::chrono::steady_clock::now();
    size_t done = 0, next_report = events.size() / 10;
    for (size_t i = 0; i < events.size(); ++i) {
        const ScheduleEvent& e = events[i];
        const std::string where = path + ":" + std::to_string(i + 2) + ": ";
        try {
            if (e.kind == ScheduleEvent::Kind::Gradient) {
                if (epochs.ended())
                    throw std::runtime_error("a gradient after the run's last epoch (" + std::to_string(o.epochs) +
                                             " of " + std::to_string(sets.train.size()) + " images)");
                const auto version = versions.find(e.version);
                if (version == versions.end())
                    throw std::runtime_error("a gradient on weights version " + std::to_string(e.version) +
                                             ", which the replay's update rule did not make (it is at " +
                                             std::to_string(rule.timestamp()) + ")");
                epochs.loss(ahead.take(i, version->second.data()));
                if (last_use[e.version] == i) versions.erase(version);
                ++done;
                if (rule.add_gradient(e.learner, e.version, ahead.learner(e.learner).run.params().grads())) {
                    keep_version();
                    epochs.after_update(rule, params, e.time_s);
                }
                ahead.start_ready(i + 1, [&](int64_t v) {
                    const auto it = versions.find(v);
                    return it == versions.end() ? nullptr : it->second.data();
                });
            } else if (e.kind == ScheduleEvent::Kind::Live) {
                rule.set_live_learners(e.learner);
            } else if (rule.update_if_complete()) {
                keep_version();
                epochs.after_update(rule, params, -1.0);
            }
        } catch (const session::Diverged&) {
            throw;
        } catch (const std::exception& ex) {
            throw std::runtime_error(where + ex.what());
        }
        if (i + 1 == next_report && i + 1 < events.size()) {
            std::printf("replay: %zu of %zu gradients, update %lld, %.1f s\n", done, rec.record.gradients(),
                        static_cast<long long>(rule.timestamp()), seconds_since(started));
            std::fflush(stdout);
            next_report += std::max<size_t>(1, events.size() / 10);
        }
    }

    const std::string snapshot = write_final_snapshot(
        o.output, ps.snapshot(static_cast<uint64_t>(rule.timestamp()), static_cast<uint64_t>(rule.samples()), s.spec.seed));
    rule.staleness().write_json((fs::path(o.output) / "staleness.json").string(), protocol.name());
    const std::string original = final_snapshot_path(run_dir.string());
    std::printf("replay: %zu gradients, %lld updates, staleness mean %.3f max %lld, %.1f s; snapshot %s\n", done,
                static_cast<long long>(rule.timestamp()), rule.staleness().mean(),
                static_cast<long long>(rule.staleness().max()), seconds_since(started), snapshot.c_str());
    if (simulated) return 0;  // nothing to compare with: the virtual cluster's run is this one
    if (!fs::exists(original)) {
        std::printf("replay: the run left no %s to compare with (it did not finish)\n", original.c_str());
        return 0;
    }
    if (same_bytes(snapshot, original)) {
        std::printf("replay: identical to the run's %s, bit for bit\n", original.c_str());
        return 0;
    }
    std::fprintf(stderr,
                 "rudra dist --replay: error: %s differs from the run's %s (the run's learners: %d thread(s), sgemm %s; "
                 "this replay: %d, %s)\n",
                 snapshot.c_str(), original.c_str(), threads, recorded_sgemm.c_str(), threads, sgemm.c_str());
    return 1;
}

}  // namespace rudra::dist::run
