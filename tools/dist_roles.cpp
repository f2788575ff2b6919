#include "tools/dist_roles.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "data/batch_stream.h"
#include "data/skip_log.h"
#include "dist/methods/easgd.h"
#include "dist/methods/gossip.h"
#include "dist/ps/learner.h"
#include "dist/ps/relay_server.h"
#include "dist/ps/stats_server.h"
#include "dist/ps/update_rule.h"
#include "dist/transport/messages.h"
#include "nn/atomic_file.h"
#include "session/metrics_log.h"
#include "tools/dist_display.h"
#include "tools/exit_codes.h"

namespace rudra::tools::dist_run {

namespace fs = std::filesystem;

std::string utc_now() {
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

void say(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

std::string resume_hint(const std::string& output) { return "go on with: rudra dist --resume " + output; }

uint64_t sample_stream_seed(uint64_t run_seed, int stream) { return run_seed * 7919 + static_cast<uint64_t>(stream); }

std::vector<int> ranks_from(int first, int size) {
    std::vector<int> r;
    for (int i = first; i < size; ++i) r.push_back(i);
    return r;
}

// A number as a user wrote it: 1.5, not 1.500000.
std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// EASGD's moving rate: --beta, or 0.9 / learners (the EASGD paper's beta = 0.9 shared by p learners).
double easgd_beta(const DistOptions& o, int learners) { return o.beta > 0 ? o.beta : 0.9 / learners; }

namespace {

// Rank 0 of a decentralized run hears every rank's heartbeats (the others watch rank 0 alone):
// of the ranks silent longer than `timeout`, the one silent longest (a killed rank fell silent
// first), or -1.
std::function<dist::SilentPeer()> silent_peer(dist::Heartbeat& heartbeat, int size, double timeout) {
    return [&heartbeat, size, timeout] {
        dist::SilentPeer lost;
        for (int r = 1; r < size; ++r) {
            const double silent = heartbeat.silent_s(r);
            if (silent > timeout && silent > lost.silent_s) lost = dist::SilentPeer{r, silent};
        }
        return lost;
    };
}

// A resumed run's metrics: epoch lines after the checkpoint's epoch are dropped (the run computes
// them again); returns the last epoch logged.
// A learner's records skipped under --bad-image skip, named at its end (the first
// SkipLog::kKeep) and counted.
void report_skipped(int rank, const data::TrainTest& sets) {
    if (!sets.skipped || sets.skipped->count() == 0) return;
    for (const std::string& what : sets.skipped->take_fresh())
        say("rank " + std::to_string(rank) + ": skipped a record (--bad-image skip): " + what);
    say("rank " + std::to_string(rank) + ": " + std::to_string(sets.skipped->count()) +
        " record(s) skipped (--bad-image skip)");
}

int64_t trim_metrics(const std::string& path, int64_t checkpoint_epoch) {
    std::ifstream in(path);
    if (!in) return 0;
    std::string kept, line;
    int64_t last = 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;  // a line torn by a kill
        if (j.value("event", "") == "epoch") {
            const int64_t e = j.value("epoch", int64_t{0});
            if (e > checkpoint_epoch) continue;
            last = std::max(last, e);
        }
        kept += line + "\n";
    }
    nn::write_file_atomically(path, kept);
    return last;
}

}  // namespace

void run_stats(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
               const data::TrainTest& sets, dist::Heartbeat& heartbeat) {
    const int lambda = protocol.learners();
    session::TrainingSession run(s.spec, sets, {.train_net = false, .test_net = true, .solver = false});
    s.release_train_images();
    const std::string metrics_path = (fs::path(o.output) / "metrics.jsonl").string();
    dist::StatsConfig sc;
    if (s.resume) sc.last_logged_epoch = trim_metrics(metrics_path, s.resume->epoch());
    session::MetricsLog log(metrics_path, s.resume.has_value());
    nlohmann::ordered_json start{{"event", s.resume ? "resume" : "start"},
                                 {"time", utc_now()},
                                 {"solver", o.solver},
                                 {"protocol", o.protocol},
                                 {"n", o.n},
                                 {"learners", lambda},
                                 {"batch", o.batch},
                                 {"mode", o.mode},
                                 {"epochs", o.epochs},
                                 {"lr_modulation", o.lr_modulation},
                                 {"momentum_compensation", o.momentum_compensation},
                                 {"warm_start", o.warm_start},
                                 {"base_lr", s.spec.solver.lr.base_lr},
                                 {"momentum", s.spec.solver.momentum},
                                 {"train_images", sets.train.size()},
                                 {"test_images", sets.test.size()}};
    if (s.resume) {
        start["checkpoint"] = s.resume->path;
        start["from_epoch"] = s.resume->epoch();
        start["from_samples"] = s.resume->samples();
        start["checkpoint_learners"] = s.resume->learners();
    }
    if (protocol.elastic() || protocol.gossip()) start["tau"] = o.tau;
    if (protocol.elastic()) start["beta"] = easgd_beta(o, lambda);
    if (!o.straggler.empty()) start["straggler"] = o.straggler;
    if (protocol.has_parameter_server()) start["layout"] = s.layout.to_json();
    log.write(start);
    sc.ps_rank = kPsRank;
    sc.has_ps = protocol.has_parameter_server();
    sc.timeline = s.timeline;
    sc.learners = lambda;
    if (protocol.has_parameter_server()) {
        sc.learners += static_cast<int>(s.layout.relays().size());  // a leaf PS's last report carries its traffic
        for (int r = 0; r < t.size(); ++r) sc.roles.push_back(s.layout.role_name(r));
    }
    sc.param_floats = run.params().size();
    sc.protocol = protocol.name();
    sc.start_samples = s.resume ? s.resume->samples() : s.start_samples;
    sc.start_elapsed_s = s.resume ? s.resume->elapsed_s() : 0.0;
    DistDisplay display(o, static_cast<int64_t>(sets.train.size()), o.batch > 0 ? o.batch : s.train_layer().batch_size,
                        sc.start_samples);
    sc.on_epoch = [&](const nlohmann::ordered_json& line) { display.metrics_line(line); };
    sc.on_report = [&](int64_t minibatches, double loss) { display.learners_report(minibatches, loss); };
    sc.heartbeat = &heartbeat;
    sc.peer_timeout_s = o.peer_timeout;
    training_starts(t, s);
    dist::run_stats_server(
        t, sc,
        [&](const float* w) {
            std::memcpy(run.params().values(), w, sizeof(float) * run.params().size());
            const session::EvalResult r = run.evaluate();
            dist::TestResult t{r.accuracy, r.loss, r.top5, {}};
            for (const auto& l : r.layers) t.layers.emplace_back(l.name, l.accuracy);
            return t;
        },
        [&](const nlohmann::ordered_json& line) { log.write(line); });
}

void run_learner_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                      const data::TrainTest& sets, const Binding& binding, dist::Heartbeat& heartbeat,
                      double straggle) {
    const int rank = t.rank();
    session::SessionSpec spec = s.spec;
    // Each learner's own dropout and sample streams, numbered as the ranks of base's learners
    // (2, 3, ...), so that every topology gives its learners the same samples.
    const int stream = kFirstLearner + s.layout.learner_index(rank);
    spec.seed = s.spec.seed + stream;
    // `auto` backends are measured once for the job: the first learner measures (or reads its
    // cache) and sends its choices to the other learners, whose nets have the same shapes.
    const std::vector<int>& learners = s.layout.learners();
    const bool measure_once = spec.kernels.uses_auto() && learners.size() > 1;
    if (measure_once && rank != learners[0]) {
        std::vector<char> text;
        if (!t.recv_while(learners[0], dist::kKernelChoices, text, s.keep_starting))
            throw dist::PeerError(learners[0], "rank " + std::to_string(learners[0]) +
                                                   " did not send the --conv-backend choices within the start-up time");
        spec.kernels.conv.assign(text.begin(), text.end());
    }
    // EASGD's learners take local steps with a solver of their own.
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = protocol.elastic()});
    if (measure_once && rank == learners[0]) {
        const std::string chosen = run.resolved_kernels().conv;
        for (size_t i = 1; i < learners.size(); ++i)
            t.send(learners[i], dist::kKernelChoices, chosen.data(), chosen.size());
        std::printf("rank %d: --conv-backend %s for the learners: %s\n", rank, s.spec.kernels.conv.c_str(),
                    chosen.c_str());
        std::fflush(stdout);
    }
    // Each learner samples its own seeded stream over the whole training set; a resumed one
    // goes on after the samples of its gradients in the checkpoint's updates.
    // (EASGD: each of its differences stands for tau mini-batches.)
    const int64_t taken =
        s.resume ? s.resume->applied(s.layout.learner_index(rank)) * (protocol.elastic() ? o.tau : 1) : 0;
    const uint64_t position = static_cast<uint64_t>(taken) * static_cast<uint64_t>(run.batch());
    data::Prefetcher prefetch(sets.train, run.train_transform(), run.batch(),
                              sample_stream_seed(s.spec.seed, stream), position, binding.helper_thread,
                              o.data.decode_threads, sets.skipped.get());
    nn::ParamStore& params = run.params();
    if (protocol.elastic()) {
        // A resumed learner starts from the centre (its first pull), with fresh momentum.
        const dist::LocalSgdWork work = local_sgd_work(run, prefetch, straggle, taken);
        dist::EasgdConfig ec;
        ec.ps_rank = kPsRank;
        ec.stats_rank = kStatsRank;
        ec.tau = o.tau;
        ec.beta = static_cast<float>(easgd_beta(o, protocol.learners()));
        ec.timeline = s.timeline;
        training_starts(t, s);
        dist::run_easgd_learner(t, ec, work);
        return;
    }
    dist::LearnerWork work;
    work.param_floats = params.size();
    work.load_weights = [&](const float* w) { std::memcpy(params.values(), w, sizeof(float) * params.size()); };
    work.use_weights = [&](float* w) { run.train_net().bind_values(w); };  // no copy
    work.compute = slowed([&]() { return run.compute_gradient(prefetch.next()); }, straggle);
    work.gradients = params.grads();
    dist::LearnerConfig lc;
    lc.ps_rank = s.layout.parent(rank);  // rank 0, or under adv the leaf PS of this node
    lc.broadcast_parent = s.layout.broadcast_parent(rank);  // adv*: the weights come down a tree
    lc.broadcast_children = s.layout.broadcast_children(rank);
    lc.peer_timeout_s = o.peer_timeout;
    lc.peer_alive = [&heartbeat, timeout = o.peer_timeout](int r) { return heartbeat.heard_within(r, timeout); };
    lc.stats_rank = kStatsRank;
    lc.overlap = o.mode == "overlap";
    lc.synchronous = protocol.synchronous();
    lc.timeline = s.timeline;
    lc.log = say;
    training_starts(t, s);
    dist::run_learner(t, lc, work);
    report_skipped(rank, sets);
}

void run_relay_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                    const data::TrainTest& sets, dist::Heartbeat& heartbeat) {
    session::SessionSpec spec = s.spec;
    spec.kernels.conv = "own";  // the net only sizes the parameters: no backend to choose
    const session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = false});
    s.release_train_images();
    dist::RelayConfig c;
    c.parent = s.layout.parent(t.rank());
    c.stats_rank = kStatsRank;
    c.children = s.layout.children(t.rank());
    c.param_floats = run.params().size();
    const auto below = static_cast<int64_t>(s.layout.learners_below(t.rank()).size());
    const auto lambda = static_cast<int64_t>(s.layout.learners().size());
    c.share = std::max<int64_t>(1, protocol.gradients_per_update() * below / lambda);
    c.peer_timeout_s = o.peer_timeout;
    c.timeline = s.timeline;
    c.pulls_weights = s.layout.topology() != dist::Topology::AdvStar;
    training_starts(t, s);
    dist::run_relay(t, c, heartbeat, say);
}

void training_starts(dist::Transport& t, const Setup& s) {
    const auto since_start = [&] {
        return seconds_since(s.process_start);
    };
    const double ready = since_start();
    // Every rank tells rank 0 it is ready and waits for rank 0's word: either every rank starts,
    // or rank 0 ends the job (a rank lost during start-up, tools/startup_watch.h). A barrier could
    // complete on some ranks and not on others when a rank dies inside it.
    std::vector<char> word;
    const auto late = [](int peer, const std::string& what) {
        return dist::PeerError(peer, what + " within the start-up allowance (--startup-timeout)");
    };
    if (t.rank() == kPsRank) {
        for (int r = 1; r < t.size(); ++r)
            if (!t.recv_while(r, dist::kReadyToTrain, word, s.keep_starting))
                throw late(r, "rank " + std::to_string(r) + " did not get ready");
        for (int r = 1; r < t.size(); ++r)
            if (!t.send_while(r, dist::kReadyToTrain, nullptr, 0, s.keep_starting))
                throw late(r, "rank " + std::to_string(r) + " did not take the word to start");
    } else if (!t.send_while(kPsRank, dist::kReadyToTrain, nullptr, 0, s.keep_starting) ||
               !t.recv_while(kPsRank, dist::kReadyToTrain, word, s.keep_starting)) {
        throw late(kPsRank, "rank 0 did not give the word to start");
    }
    if (s.started) s.started();
    // VmRSS: all resident memory; RssAnon: the part no other process maps.
    int64_t resident_kb = 0, private_kb = 0;
    if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        long kb = 0;
        while (std::fgets(line, sizeof line, f)) {
            if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) resident_kb = kb;
            if (std::sscanf(line, "RssAnon: %ld kB", &kb) == 1) private_kb = kb;
        }
        std::fclose(f);
    }
    const dist::RankStarted info{ready, since_start(), resident_kb, private_kb};
    t.send(kStatsRank, dist::kRankStarted, &info, sizeof info);
}

std::string checkpoint_metadata(const std::string& reason, int64_t epoch, double elapsed_s, const std::string& protocol,
                                const nlohmann::ordered_json& settings, const nlohmann::ordered_json& rule) {
    return nlohmann::ordered_json{{"format", "rudra dist checkpoint"},
                                  {"reason", reason},
                                  {"written_at", utc_now()},
                                  {"epoch", epoch},
                                  {"elapsed_s", elapsed_s},
                                  {"protocol", protocol},
                                  {"settings", settings},
                                  {"rule", rule}}
        .dump();
}

std::pair<int, double> parse_straggler(const std::string& text, const std::vector<int>& learner_ranks) {
    if (text.empty()) return {-1, 1.0};
    const auto bad = [&] {
        std::string ranks;
        for (int r : learner_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        return std::runtime_error("--straggler must be RANK:FACTOR with RANK a learner's rank (" + ranks +
                                  ") and FACTOR a number >= 1, got '" + text + "'");
    };
    const size_t colon = text.find(':');
    if (colon == std::string::npos) throw bad();
    try {
        size_t used_rank = 0, used_factor = 0;
        const int rank = std::stoi(text.substr(0, colon), &used_rank);
        const double factor = std::stod(text.substr(colon + 1), &used_factor);
        if (used_rank != colon || used_factor != text.size() - colon - 1 || !(factor >= 1.0) || !std::isfinite(factor) ||
            std::find(learner_ranks.begin(), learner_ranks.end(), rank) == learner_ranks.end())
            throw bad();
        return {rank, factor};
    } catch (const std::logic_error&) {  // stoi/stod: not a number, out of range
        throw bad();
    }
}

CheckpointEvery parse_checkpoint_every(const std::string& text) {
    size_t used = 0;
    double v = -1;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
    }
    const std::string unit = text.substr(std::min(used, text.size()));
    // Finite and within what an int64 of updates or a duration of seconds holds (inf, nan and
    // 1e30 would not convert).
    const double most = unit == "m" ? 1e7 : unit == "s" ? 1e9 : 1e15;
    if (!(v >= 0 && v <= most) || !(unit.empty() || unit == "s" || unit == "m") || (unit.empty() && v != std::floor(v)))
        throw std::runtime_error("--checkpoint-every must be N (updates, at most 1e15), Ns (seconds, at most 1e9), "
                                 "Nm (minutes, at most 1e7) or 0, got '" + text + "'");
    CheckpointEvery every;
    if (unit.empty()) every.updates = static_cast<int64_t>(v);
    else every.seconds = unit == "m" ? v * 60 : v;
    return every;
}

namespace {

// A decentralized run's checkpoint, written by its first learner: the model (all-reduce: every
// learner's, which are the same; gossip: the learners' average) with its solver history, and in
// the metadata what a resumed run needs, in the fields the PS protocols' checkpoints use (each
// learner's mini-batches in "applied": `taken`, or `steps` for every learner).
void write_learners_checkpoint(const DistOptions& o, const Setup& s, const session::TrainingSession& run, int lambda,
                               int64_t samples_per_epoch, const std::string& reason, int64_t steps, int64_t samples,
                               double elapsed_s, const float* weights = nullptr,
                               const std::vector<int64_t>& taken = {}) {
    const int64_t epoch = samples / std::max<int64_t>(1, samples_per_epoch);
    nn::Snapshot snap = run.snapshot(static_cast<uint64_t>(steps), static_cast<uint64_t>(samples), s.spec.seed);
    if (weights) std::copy(weights, weights + snap.params.size(), snap.params.begin());
    const nlohmann::ordered_json rule{
        {"timestamp", steps},
        {"samples", samples},
        {"applied", taken.empty() ? std::vector<int64_t>(static_cast<size_t>(lambda), steps) : taken}};
    snap.metadata = checkpoint_metadata(reason, epoch, elapsed_s, o.protocol, run_settings(o, lambda), rule);
    const std::string path = checkpoint_path(o.output);
    nn::write_snapshot(path, snap);
    if (reason != "epoch" && reason != "periodic")
        say(o.protocol + ": checkpoint (" + reason + ") at step " +
            std::to_string(taken.empty() ? steps : *std::max_element(taken.begin(), taken.end())) + ", epoch " +
            std::to_string(epoch) + (samples % std::max<int64_t>(1, samples_per_epoch) ? " and part of the next" : "") +
            ": " + path);
}

// A resumed decentralized run: where it goes on from, said once by its first learner.
int64_t resumed_steps(const Setup& s, session::TrainingSession& run, bool first, int learners,
                      session::TrainingSession::History history = session::TrainingSession::History::Required) {
    if (!s.resume) return 0;
    run.restore(s.resume->snapshot, s.resume->path, history);
    const int64_t steps = s.resume->meta.at("rule").value("timestamp", int64_t{0});
    const int before = s.resume->learners();
    if (first)
        say("resuming from " + s.resume->path + " (" + s.resume->meta.value("reason", std::string("?")) +
            " checkpoint of " + s.resume->meta.value("written_at", std::string("?")) + "): epoch " +
            std::to_string(s.resume->epoch()) + ", step " + std::to_string(steps) + ", " +
            std::to_string(s.resume->samples()) + " samples" +
            (before != learners ? ", with " + std::to_string(learners) + " learners instead of " + std::to_string(before)
                                : std::string()));
    return steps;
}

}  // namespace

// All-reduce: rank 0 and ranks 2.. are learners, each with its own solver, all starting from the
// same weights and stepping alike; rank 0 sends the weights to the statistics server at every
// epoch boundary, writes the checkpoints and final.rudra. Returns the exit code.
int run_allreduce_role(const DistOptions& o, const Setup& s, dist::Transport& t, dist::SumGroup& group,
                       const data::TrainTest& sets, const Binding& binding, dist::Heartbeat& heartbeat,
                       double straggle) {
    const int rank = t.rank(), lambda = group.members();
    session::SessionSpec spec = s.spec;  // one seed: the same initial weights on every learner
    // As hardsync: one update of lambda*mu samples takes alpha0 * sqrt(lambda*mu / B).
    const int mu = s.spec.batch > 0 ? s.spec.batch : s.train_layer().batch_size;
    const int reference = o.reference_batch > 0 ? o.reference_batch : s.train_layer().batch_size;
    spec.solver.lr.base_lr *= dist::synchronous_lr_scale(lambda, mu, reference);
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = true});
    if (!o.warm_start.empty()) run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    const int64_t resumed = resumed_steps(s, run, rank == kPsRank, lambda);
    const int64_t start_samples = s.resume ? s.resume->samples() : s.start_samples;
    if (rank == kPsRank)
        say("allreduce: " + std::to_string(lambda) + " learners, each step " + std::to_string(lambda) + " x " +
            std::to_string(run.batch()) + " samples at base_lr " + std::to_string(spec.solver.lr.base_lr) +
            " (alpha0 * sqrt(lambda*mu/" + std::to_string(reference) + "))");
    // Each learner's own stream; a resumed one goes on after the mini-batches it has taken.
    data::Prefetcher prefetch(sets.train, run.train_transform(), run.batch(),
                              sample_stream_seed(s.spec.seed, rank),
                              static_cast<uint64_t>(resumed) * static_cast<uint64_t>(run.batch()), binding.helper_thread,
                              o.data.decode_threads, sets.skipped.get());
    nn::ParamStore& params = run.params();
    dist::AllreduceWork work;
    work.param_floats = params.size();
    work.gradients = params.grads();
    work.final_after = dist::final_gradients_by_layer(run.train_net());
    work.compute = slowed(
        [&](const std::function<void(size_t)>& after_layer) { return run.compute_gradient(prefetch.next(), after_layer); },
        straggle);
    const int64_t start_iteration = s.resume ? resumed : s.start_samples / (int64_t(lambda) * run.batch());
    work.apply = [&](int64_t step) { run.solver().apply(params.grads(), start_iteration + step); };
    work.weights = [&] { return static_cast<const float*>(params.values()); };
    dist::AllreduceConfig c;
    if (rank == kPsRank) {
        c.silent_peer = silent_peer(heartbeat, t.size(), o.peer_timeout);
        c.checkpoint = [&](const std::string& reason, int64_t steps, int64_t samples, double elapsed_s) {
            write_learners_checkpoint(o, s, run, lambda, static_cast<int64_t>(sets.train.size()), reason,
                                      start_iteration + steps, samples, elapsed_s);
        };
    }
    const CheckpointEvery every = parse_checkpoint_every(o.checkpoint_every);
    c.checkpoint_every_steps = every.updates;
    c.checkpoint_every_s = every.seconds;
    c.stop_requested = s.stop_requested;
    c.timeline = s.timeline;
    c.stats_rank = kStatsRank;
    c.batch = run.batch();
    c.samples_per_epoch = static_cast<int64_t>(sets.train.size());
    c.epochs = o.epochs;
    c.start_samples = start_samples;
    c.start_steps = start_iteration;
    c.elapsed_offset_s = s.resume ? s.resume->elapsed_s() : 0.0;
    c.replay_epoch = s.resume && start_samples % c.samples_per_epoch == 0;
    training_starts(t, s);
    const dist::AllreduceSummary r = dist::run_allreduce_learner(t, group, c, work);
    if (rank != kPsRank) return 0;
    if (r.stopped) {
        say("allreduce: stopped by a signal at step " + std::to_string(start_iteration + r.steps) +
            "; " + resume_hint(o.output));
        return kExitStopped;
    }
    const std::string snap_path = (fs::path(o.output) / "final.rudra").string();
    nn::write_snapshot(snap_path, run.snapshot(static_cast<uint64_t>(start_iteration + r.steps),
                                               static_cast<uint64_t>(r.samples), s.spec.seed));
    std::printf("allreduce: %lld steps; compute %.1f s, all-reduce wait %.1f s (overlap ratio %.3f); snapshot %s\n",
                static_cast<long long>(r.steps), r.compute_s, r.wait_s,
                r.compute_s + r.wait_s > 0 ? r.compute_s / (r.compute_s + r.wait_s) : 0.0, snap_path.c_str());
    std::fflush(stdout);
    return 0;
}

dist::LocalSgdWork local_sgd_work(session::TrainingSession& run, data::Prefetcher& prefetch, double straggle,
                                  int64_t first_step) {
    dist::LocalSgdWork work;
    work.param_floats = run.params().size();
    work.weights = run.params().values();
    work.step = slowed([&run, &prefetch, step = first_step]() mutable { return run.step(prefetch.next(), step++); },
                       straggle);
    return work;
}

std::vector<int> decentralized_learner_ranks(int size) {
    std::vector<int> ranks = ranks_from(kStatsRank + 1, size);
    ranks.insert(ranks.begin(), kPsRank);
    return ranks;
}

// Gossip: rank 0 and ranks 2.. are learners with solvers of their own, all starting from the
// same weights (a resumed run: the checkpoint's average, with fresh momentum); rank 0 sends the
// learners' average to the statistics server at every epoch boundary, writes it as the
// checkpoint and as final.rudra, and returns the exit code; each learner records its peers.
int run_gossip_role(const DistOptions& o, const Setup& s, dist::Transport& t, dist::SumGroup& group,
                    const dist::Protocol& protocol, const data::TrainTest& sets, const Binding& binding,
                    dist::Heartbeat& heartbeat, double straggle) {
    const int rank = t.rank();
    session::TrainingSession run(s.spec, sets, {.train_net = true, .test_net = false, .solver = true});
    if (!o.warm_start.empty()) run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    const int64_t resumed =
        resumed_steps(s, run, rank == kPsRank, group.members(), session::TrainingSession::History::Ignored);
    // Stopped within an epoch: this learner goes on where it stopped, if the learners are the same.
    const int64_t partial = s.resume && s.resume->learners() == group.members()
                                ? std::max<int64_t>(0, s.resume->applied(group.index()) - resumed)
                                : 0;
    const int64_t before = resumed + partial;  // this learner's steps so far
    const int64_t samples_per_epoch = static_cast<int64_t>(sets.train.size());
    if (rank == kPsRank)
        say(protocol.name() + ": " + std::to_string(group.members()) + " learners step locally and exchange models " +
            "with a random peer every " + std::to_string(o.tau) + " steps");
    data::Prefetcher prefetch(sets.train, run.train_transform(), run.batch(),
                              sample_stream_seed(s.spec.seed, rank),
                              static_cast<uint64_t>(before) * static_cast<uint64_t>(run.batch()), binding.helper_thread,
                              o.data.decode_threads, sets.skipped.get());
    nn::ParamStore& params = run.params();
    const dist::LocalSgdWork work = local_sgd_work(run, prefetch, straggle, before);
    dist::GossipConfig c;
    c.mode = protocol.kind() == dist::Protocol::Kind::GossipPush ? dist::GossipMode::Push : dist::GossipMode::Pull;
    c.tau = o.tau;
    c.seed = s.spec.seed;
    c.learner_ranks = decentralized_learner_ranks(t.size());
    c.stats_rank = kStatsRank;
    c.batch = run.batch();
    c.samples_per_epoch = samples_per_epoch;
    c.epochs = o.epochs;
    c.first_epoch = (s.resume ? s.resume->samples() : s.start_samples) / samples_per_epoch;
    c.start_steps = resumed;
    c.start_partial = partial;
    c.elapsed_offset_s = s.resume ? s.resume->elapsed_s() : 0.0;
    c.replay_epoch = s.resume && s.resume->samples() % samples_per_epoch == 0;
    c.stop_requested = s.stop_requested;
    c.timeline = s.timeline;
    if (rank == kPsRank) {
        c.silent_peer = silent_peer(heartbeat, t.size(), o.peer_timeout);
        c.checkpoint = [&](const std::string& reason, const float* average, int64_t steps,
                           const std::vector<int64_t>& taken, int64_t samples, double elapsed_s) {
            write_learners_checkpoint(o, s, run, group.members(), samples_per_epoch, reason, steps, samples, elapsed_s,
                                      average, taken);
        };
    }
    training_starts(t, s);
    const dist::GossipSummary r = dist::run_gossip_learner(t, group, c, work);
    // The peers this learner chose, one line per exchange: "step peer_rank" (a resumed run keeps
    // the lines up to its checkpoint).
    const fs::path peers_dir = fs::path(o.output) / "gossip-peers";
    const fs::path peers_path = peers_dir / ("rank-" + std::to_string(rank) + ".txt");
    fs::create_directories(peers_dir);
    std::string peers;
    if (s.resume) {
        std::ifstream old(peers_path);
        std::string line;
        while (std::getline(old, line))
            if (std::atoll(line.c_str()) <= before) peers += line + "\n";
    }
    const int64_t first_exchange = before / o.tau + 1;
    for (size_t i = 0; i < r.peers.size(); ++i)
        peers += std::to_string((first_exchange + static_cast<int64_t>(i)) * o.tau) + " " + std::to_string(r.peers[i]) +
                 "\n";
    nn::write_file_atomically(peers_path.string(), peers);
    if (rank != kPsRank) return 0;
    if (r.stopped) {
        say(protocol.name() + ": stopped by a signal after epoch " + std::to_string(r.epoch) +
            "; " + resume_hint(o.output));
        return kExitStopped;
    }
    std::copy(r.average.begin(), r.average.end(), params.values());
    const std::string snap_path = (fs::path(o.output) / "final.rudra").string();
    const int64_t samples = r.epoch * samples_per_epoch;
    nn::write_snapshot(snap_path, run.snapshot(static_cast<uint64_t>(before + r.steps), static_cast<uint64_t>(samples),
                                               s.spec.seed));
    std::printf("%s: %lld local steps, %zu exchanges; compute %.1f s, exchanges and epoch sums %.1f s; last spread "
                "%.4g; the learners' average in %s\n",
                protocol.name().c_str(), static_cast<long long>(r.steps), r.peers.size(), r.compute_s, r.wait_s,
                r.spreads.empty() ? 0.0 : r.spreads.back(), snap_path.c_str());
    std::fflush(stdout);
    return 0;
}

}  // namespace rudra::tools::dist_run
