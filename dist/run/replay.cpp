// `rudra dist --replay RUN`: a parameter-server run computed again in one process, from the
// schedule its PS recorded (dist/ps/schedule_record.h). Each learner is a session of its own, with
// its seed and its sample stream as in the run; each recorded gradient is computed by its learner,
// on the weights of the version it names, from the next mini-batch of that learner's stream, and
// fed to the update rule in the recorded order. With the same kernels and threads, the final
// weights are the run's, bit for bit, whatever the protocol's timing made of it.
//
// The replay runs on the one run loop (session/run_loop.h), a step being the record's events up to
// the next update: it checkpoints at epoch ends, periodically and on signals like a run, and
// `--resume` goes on from its checkpoint to the same bytes. Its checkpoint keeps, besides the PS's
// weights, history and rule, its place in the record and the weights versions that later
// gradients were computed on (OUT/replay-versions-EVENT.rudra, named by the checkpoint).
#include "dist/run/replay.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/clock.h"
#include "dist/ps/relay_server.h"
#include "dist/ps/schedule_record.h"
#include "dist/ps/update_rule.h"
#include "dist/run/checkpoint.h"
#include "dist/run/methods.h"
#include "dist/run/replay_checkpoint.h"
#include "dist/run/replay_epoch_lines.h"
#include "dist/run/replay_learners.h"
#include "dist/run/roles.h"
#include "dist/transport/wire.h"
#include "nn/atomic_file.h"
#include "session/exit_codes.h"
#include "session/run_folder.h"
#include "session/run_loop.h"
#include "session/stop_signals.h"
#include "session/training_session.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

namespace {

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
        if (opt != "--replay" && opt != "--output" && opt != "--overwrite" && opt != "--resume" &&
            opt != "--checkpoint-every" && opt != "--wire")
            throw std::runtime_error(opt + " does not go with --replay: a replay takes the recorded run's settings "
                                           "(only -o/--output, --overwrite, --resume, --checkpoint-every and --wire "
                                           "may be given)");
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


// The replay on the run loop: a step takes the record's events up to the next update.
class ReplayMethod : public session::RunMethod {
public:
    struct Parts {
        const DistOptions& o;
        const std::string& record_path;
        const std::vector<ScheduleEvent>& events;
        size_t gradients;  // in the whole record
        const dist::Protocol& protocol;
        session::TrainingSession& ps;
        dist::UpdateRule& rule;
        EpochLines& epochs;
        nlohmann::ordered_json settings;
        uint64_t seed;  // the run's, in its snapshots
    };
    ReplayMethod(Parts p, size_t from, WeightsVersions versions,
                 const std::function<ReplayLearner&(int)>& learner, int threads)
        : p_(std::move(p)), next_(from), versions_(std::move(versions)),
          ahead_(p_.events, from, p_.protocol.learners(), threads, dist::wire_named(p_.o.wire), learner), started_(std::chrono::steady_clock::now()) {
        for (size_t i = 0; i < p_.events.size(); ++i) {
            const ScheduleEvent& e = p_.events[i];
            if (e.kind != ScheduleEvent::Kind::Gradient) continue;
            last_use_[e.version] = i;
            if (i < from) ++done_;
        }
        for (auto it = versions_.begin(); it != versions_.end();)  // versions no gradient to come needs
            it = last_use_.count(it->first) && last_use_[it->first] >= from ? std::next(it) : versions_.erase(it);
        keep_version();
        report_every_ = std::max<size_t>(1, p_.events.size() / 10);
        next_report_ = (from / report_every_ + 1) * report_every_;
    }

    session::StepDone step(const session::RunPosition&, bool) override {
        const int64_t before = p_.rule.samples();
        while (next_ < p_.events.size())
            if (take(next_++)) return {p_.rule.samples() - before, false, 1};
        ended_ = true;  // a stopped run's record: its last update is made
        return {0, true, 0};
    }

    bool save(session::CheckpointWhy why, const session::RunPosition& at) override {
        if (ended_) return true;  // the replay is complete: final.rudra follows
        if (!p_.rule.idle() || sum_left_ > 0) return false;
        const std::string versions = versions_file_name(next_);
        write_versions((fs::path(p_.o.output) / versions).string(), versions_, next_);
        session::CheckpointFacts facts;
        facts.method = p_.protocol.name();
        facts.reason = session::reason_name(why);
        facts.epoch = at.epoch;
        facts.elapsed_s = at.elapsed_s;
        facts.settings = p_.settings;
        facts.rule = p_.rule.state();
        facts.state = {{"replay",
                        {{"record", p_.record_path},
                         {"event", next_},
                         {"events_hash", events_hash(p_.events, next_)},
                         {"versions", versions},
                         {"epoch_lines", p_.epochs.state()}}}};
        write_checkpoint(p_.o.output,
                         p_.ps.snapshot(static_cast<uint64_t>(p_.rule.timestamp()),
                                        static_cast<uint64_t>(p_.rule.samples()), p_.seed),
                         facts, {"replay", "update " + std::to_string(p_.rule.timestamp())});
        remove_versions_but(p_.o.output, versions);
        return true;
    }

    bool ended() const { return ended_; }
    size_t next_event() const { return next_; }
    size_t gradients_done() const { return done_; }
    double seconds() const { return seconds_since(started_); }

private:
    // Event i; true when it completed an update.
    bool take(size_t i) {
        const ScheduleEvent& e = p_.events[i];
        bool updated = false;
        try {
            if (e.kind == ScheduleEvent::Kind::Gradient) {
                const auto version = versions_.find(e.version);
                if (version == versions_.end())
                    throw std::runtime_error("a gradient on weights version " + std::to_string(e.version) +
                                             ", which the replay's update rule did not make (it is at " +
                                             std::to_string(p_.rule.timestamp()) + ")");
                p_.epochs.loss(ahead_.take(i, version->second.data()));
                if (last_use_[e.version] == i) versions_.erase(version);
                ++done_;
                const float* grad = ahead_.learner(e.learner).run.params().grads();
                if (sum_left_ > 0) {
                    add_to_sum(e, grad);
                    if (--sum_left_ == 0) updated = p_.rule.add_bundle(bundle_, sum_.data());
                } else {
                    updated = p_.rule.add_gradient(e.learner, e.version, grad);
                }
                if (updated) after_update(e.time_s);
                ahead_.start_ready(i + 1, [&](int64_t v) {
                    const auto it = versions_.find(v);
                    return it == versions_.end() ? nullptr : it->second.data();
                });
            } else if (e.kind == ScheduleEvent::Kind::Sum) {
                sum_left_ = e.learner;
                bundle_.clear();
            } else if (e.kind == ScheduleEvent::Kind::Live) {
                p_.rule.set_live_learners(e.learner);
            } else if ((updated = p_.rule.update_if_complete())) {
                after_update(-1.0);
            }
        } catch (const session::Diverged&) {
            throw;
        } catch (const std::exception& ex) {
            throw std::runtime_error(p_.record_path + ":" + std::to_string(i + 2) + ": " + ex.what());
        }
        if (i + 1 >= next_report_ && i + 1 < p_.events.size()) {
            std::printf("replay: %zu of %zu gradients, update %lld, %.1f s\n", done_, p_.gradients,
                        static_cast<long long>(p_.rule.timestamp()), seconds());
            std::fflush(stdout);
            next_report_ += report_every_;
        }
        return updated;
    }
    // A leaf PS's sum, built as the leaf builds it, in the record's order.
    void add_to_sum(const ScheduleEvent& e, const float* grad) {
        const size_t n = p_.ps.params().size();
        if (sum_.size() < n) sum_ = kernels::AlignedBuffer(n);
        dist::add_to_relayed_sum(sum_.data(), grad, static_cast<long>(n), bundle_.empty());
        bundle_.push_back({e.learner, e.version});
    }
    void after_update(double time_s) {
        keep_version();
        p_.epochs.after_update(p_.rule, p_.ps.params(), time_s);
    }
    // The weights just made, kept while a gradient to come was computed on them.
    void keep_version() {
        const auto use = last_use_.find(p_.rule.timestamp());
        if (use != last_use_.end() && use->second >= next_ && !versions_.count(p_.rule.timestamp())) {
            const nn::ParamStore& w = p_.ps.params();
            versions_[p_.rule.timestamp()].assign(w.values(), w.values() + w.size());
        }
    }

    Parts p_;
    size_t next_;  // the next event
    WeightsVersions versions_;
    std::unordered_map<int64_t, size_t> last_use_;  // by version: the last gradient event on it
    ComputedAhead ahead_;
    std::chrono::steady_clock::time_point started_;
    size_t done_ = 0, report_every_ = 1, next_report_ = 0;
    bool ended_ = false;
    int sum_left_ = 0;  // gradients still to come in the relayed sum being built
    std::vector<dist::BundledGradient> bundle_;
    kernels::AlignedBuffer sum_;
};

}  // namespace

int run_replay(const DistOptions& options) {
    refuse_other_options(options);
    const std::string path = record_file(options.replay);
    const ScheduleRecord::Read rec = ScheduleRecord::read(path);
    DistOptions o = options;
    const auto settings = header_field<nlohmann::json>(rec.header, "settings", path);
    if (!settings.is_object()) throw std::runtime_error(path + ":1: the header's \"settings\" is not an object");
    // --wire computes the run's schedule with the other rounding: the same staleness, gradient for
    // gradient, with only the wire changed (the recorded settings keep a wire the command names).
    apply_recorded_settings(o, settings, path);
    const std::string run_wire = settings.contains("wire") && settings["wire"].is_string()
                                     ? settings["wire"].get<std::string>()
                                     : std::string(dist::wire_name(dist::Wire::Fp32));
    const dist::Wire wire = dist::wire_named(o.wire);
    check_paths_from_here(o, rec.header, path);
    const fs::path run_dir = fs::path(path).parent_path();
    const bool resuming = !o.resume.empty();
    if (!o.given.count("--output"))
        o.output = resuming ? (fs::is_directory(o.resume) ? o.resume : fs::path(o.resume).parent_path().string())
                            : (run_dir / "replay").string();
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
    if (wire != dist::Wire::Fp32)
        for (const ScheduleEvent& e : rec.record.events())
            if (e.kind == ScheduleEvent::Kind::Sum)
                throw std::runtime_error(path + ": the run's relays summed gradients, and with --wire " + o.wire +
                                         " they round their sums again, which a replay does not repeat: replay "
                                         "--topology base runs with --wire bf16");
    if (const std::string note = o.kernels.resolve_precision(); !note.empty()) say(note);
    const session::CheckpointEvery checkpoint_every = parse_checkpoint_every(o.checkpoint_every);
    const int lambda = rec.record.learners();
    const dist::Protocol protocol = dist::Protocol::parse(o.protocol, lambda, o.n, o.backup, o.k);
    if (protocol.elastic() || dist::Protocol::is_decentralized(protocol.kind()))
        throw std::runtime_error(path + ": " + protocol.name() + " is not replayed: its learners keep models of their own");
    const std::string sgemm = sgemm_identity();
    if (!simulated && recorded_sgemm != sgemm)
        say("rudra dist --replay: warning: the run's learners computed with sgemm " + recorded_sgemm + ", this process " +
            "with " + sgemm + ": the sums may be ordered otherwise, and the weights differ in their last bits");

    omp_set_num_threads(threads);
    session::install_stop_signals();
    Setup s = read_setup(o);
    const data::TrainTest sets = session::load_data(session::plan_data(o.data, s.spec.net), o.data);
    const nlohmann::ordered_json run_settings_now = run_settings(o, lambda);
    session::SessionSpec ps_spec = s.spec;
    ps_spec.kernels.conv = "own";
    session::TrainingSession ps(ps_spec, sets, {.train_net = true, .test_net = false, .solver = true});
    const std::vector<ScheduleEvent>& events = rec.record.events();
    std::optional<ReplayResume> resumed;
    if (resuming) resumed.emplace(read_replay_checkpoint(o.resume, path, events, run_settings_now, ps.params().size()));
    // A virtual cluster's outputs go beside its record; a run's own files are never replaced.
    std::error_code ec;
    const bool into_record_folder = fs::equivalent(o.output, run_dir, ec);
    if (into_record_folder && !simulated)
        throw std::runtime_error("-o " + o.output + " is the recorded run's own folder: give the replay another");
    const std::string go_on = "rudra dist --replay " + options.replay + " --resume " + o.output;
    session::RunFolder folder(o.output,
                              into_record_folder || resuming ? session::RunFolder::Start::Resume
                              : o.overwrite                  ? session::RunFolder::Start::Overwrite
                                                             : session::RunFolder::Start::Fresh,
                              fs::exists(checkpoint_path(o.output)) ? go_on : "");
    nn::remove_stale_tmp(checkpoint_path(o.output));
    EpochLines epochs(o, s, sets, protocol, path, simulated, resumed ? &resumed->epoch_lines : nullptr);
    if (resumed) {
        ps.restore(resumed->checkpoint.snapshot, resumed->checkpoint.path, session::TrainingSession::History::Required);
    } else if (!o.warm_start.empty()) {
        ps.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    }
    dist::UpdateRule rule(protocol, ps.solver(), ps.params(), lambda, rule_config(o, s, protocol, ps.batch()));
    const size_t from = resumed ? resumed->event : 0;
    if (resumed) {
        rule.restore_state(resumed->checkpoint.meta.at("rule"));
        for (size_t i = 0; i < from; ++i)  // the learners lost before the checkpoint
            if (events[i].kind == ScheduleEvent::Kind::Live) rule.set_live_learners(events[i].learner);
    }

    std::printf("rudra dist --replay %s: %s, %d learners, mini-batch %d, %zu gradients; %d thread(s), sgemm %s%s; "
                "output %s\n",
                path.c_str(), protocol.name().c_str(), lambda, ps.batch(), rec.record.gradients(), threads,
                sgemm.c_str(), wire == dist::Wire::Fp32 ? "" : ("; wire " + o.wire).c_str(), o.output.c_str());
    if (resumed)
        std::printf("replay: going on from %s at update %lld (line %zu of the record)\n",
                    resumed->checkpoint.path.c_str(), static_cast<long long>(rule.timestamp()), from + 2);
    std::fflush(stdout);

    // Each learner starts at its next gradient's place in its sample stream.
    std::vector<int64_t> position(static_cast<size_t>(lambda), -1);
    for (size_t i = from; i < events.size(); ++i)
        if (events[i].kind == ScheduleEvent::Kind::Gradient && position[static_cast<size_t>(events[i].learner)] < 0)
            position[static_cast<size_t>(events[i].learner)] = events[i].position;
    std::vector<std::unique_ptr<ReplayLearner>> learners(static_cast<size_t>(lambda));
    const auto learner = [&](int l) -> ReplayLearner& {
        auto& slot = learners[static_cast<size_t>(l)];
        if (!slot)
            slot = std::make_unique<ReplayLearner>(s, sets, l, o.data.decode_threads,
                                                   std::max<int64_t>(0, position[static_cast<size_t>(l)]));
        return *slot;
    };
    ReplayMethod method({o, path, events, rec.record.gradients(), protocol, ps, rule, epochs, run_settings_now, s.spec.seed}, from,
                        resumed ? std::move(resumed->versions) : WeightsVersions{}, learner,
                        threads);

    session::RunPlan plan;
    plan.samples_per_epoch = static_cast<int64_t>(sets.train.size());
    plan.total_samples = o.epochs * plan.samples_per_epoch;
    plan.start = {rule.timestamp(), rule.samples(), 0, 0.0};
    plan.elapsed_offset_s = resumed ? resumed->checkpoint.elapsed_s() : 0.0;
    plan.checkpoint_every = checkpoint_every;
    plan.checkpoint_at_epochs = true;
    plan.stop_requested = session::stop_requested;
    plan.snapshot_requested = session::take_checkpoint_request;
    const session::RunEnd end = session::run_loop(method, plan);
    if (end.stopped && !method.ended()) {
        std::printf("replay: stopped at update %lld (%zu of %zu gradients) after %.1f s; checkpoint %s; go on with: "
                    "%s\n",
                    static_cast<long long>(rule.timestamp()), method.gradients_done(), rec.record.gradients(),
                    method.seconds(), checkpoint_path(o.output).c_str(), go_on.c_str());
        return session::kExitStopped;
    }
    for (size_t i = method.next_event(); i < events.size(); ++i)
        if (events[i].kind == ScheduleEvent::Kind::Gradient)
            throw std::runtime_error(path + ":" + std::to_string(i + 2) + ": a gradient after the run's last epoch (" +
                                     std::to_string(o.epochs) + " epochs)");

    const std::string snapshot = write_final_snapshot(
        o.output, ps.snapshot(static_cast<uint64_t>(rule.timestamp()), static_cast<uint64_t>(rule.samples()), s.spec.seed));
    rule.staleness().write_json((fs::path(o.output) / "staleness.json").string(), protocol.name());
    // The replay is complete: its checkpoint and kept versions would only go on to the same end.
    fs::remove(checkpoint_path(o.output), ec);
    remove_versions_but(o.output, "");
    const std::string original = final_snapshot_path(run_dir.string());
    std::printf("replay: %zu gradients, %lld updates, staleness mean %.3f max %lld, %.1f s; snapshot %s\n",
                method.gradients_done(), static_cast<long long>(rule.timestamp()), rule.staleness().mean(),
                static_cast<long long>(rule.staleness().max()), method.seconds(), snapshot.c_str());
    if (simulated) return 0;  // nothing to compare with: the virtual cluster's run is this one
    if (o.wire != run_wire) {
        std::printf("replay: computed with --wire %s, the run with %s: not compared with the run's weights\n",
                    o.wire.c_str(), run_wire.c_str());
        return 0;
    }
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
