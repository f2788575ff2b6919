// The learners of all-reduce and gossip: rank 0 and ranks 2.. (rank 1 is the statistics server).
#include "dist/run/roles.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/clock.h"
#include "data/batch_stream.h"
#include "dist/methods/gossip.h"
#include "dist/ps/update_rule.h"
#include "dist/transport/messages.h"
#include "nn/atomic_file.h"
#include "session/exit_codes.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

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
                       const data::TrainTest& sets, const placement::Binding& binding, dist::Heartbeat& heartbeat,
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
    c.checkpoint_every = parse_checkpoint_every(o.checkpoint_every);
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
        return session::kExitStopped;
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

// Gossip: rank 0 and ranks 2.. are learners with solvers of their own, all starting from the
// same weights (a resumed run: the checkpoint's average, with fresh momentum); rank 0 sends the
// learners' average to the statistics server at every epoch boundary, writes it as the
// checkpoint and as final.rudra, and returns the exit code; each learner records its peers.
int run_gossip_role(const DistOptions& o, const Setup& s, dist::Transport& t, dist::SumGroup& group,
                    const dist::Protocol& protocol, const data::TrainTest& sets, const placement::Binding& binding,
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
        return session::kExitStopped;
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

}  // namespace rudra::dist::run
