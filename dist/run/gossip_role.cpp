// A learner of gossip SGD (dist/methods/gossip.h): rank 0 and ranks 2.. (rank 1 is the
// statistics server); each records the peers it chose.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/batch_stream.h"
#include "dist/methods/gossip.h"
#include "dist/run/roles.h"
#include "nn/atomic_file.h"
#include "session/exit_codes.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

// Gossip: rank 0 and ranks 2.. are learners with solvers of their own, all starting from the
// same weights (a resumed run: the checkpoint's average, with fresh momentum); rank 0 sends the
// learners' average to the statistics server at every epoch boundary, writes it as the
// checkpoint and as final.rudra, and returns the exit code; each learner records its peers.
int run_gossip_role(const RoleContext& rc) {
    const DistOptions& o = rc.o;
    const Setup& s = rc.s;
    const data::TrainTest& sets = rc.sets;
    const dist::Protocol& protocol = rc.protocol;
    dist::Transport& t = rc.transport;
    dist::SumGroup& group = *rc.group;
    const int rank = t.rank();
    session::TrainingSession run(s.spec, sets, {.train_net = true, .test_net = false, .solver = true});
    if (!o.warm_start.empty()) run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    const int64_t resumed = resumed_steps(rc, run, session::TrainingSession::History::Ignored);
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
                              static_cast<uint64_t>(before) * static_cast<uint64_t>(run.batch()), rc.binding.helper_thread,
                              o.data.decode_threads, sets.skipped.get());
    nn::ParamStore& params = run.params();
    const dist::LocalSgdWork work = local_sgd_work(run, prefetch, rc.straggle, before);
    dist::GossipConfig c;
    c.mode = protocol.kind() == dist::Protocol::Kind::GossipPush ? dist::GossipMode::Push : dist::GossipMode::Pull;
    c.tau = o.tau;
    c.seed = s.spec.seed;
    c.learner_ranks = decentralized_learner_ranks(t.size());
    c.stats_rank = kStatsRank;
    c.batch = run.batch();
    c.samples_per_epoch = samples_per_epoch;
    c.epochs = o.epochs;
    c.first_epoch = s.first_samples() / samples_per_epoch;
    c.start_steps = resumed;
    c.start_partial = partial;
    c.elapsed_offset_s = s.elapsed_offset_s();
    c.replay_epoch = replays_epoch(s, samples_per_epoch);
    c.stop_requested = s.stop_requested;
    c.wire = dist::wire_named(o.wire);
    c.timeline = s.timeline;
    if (rank == kPsRank) {
        c.silent_peer = silent_peer(rc.heartbeat, t.size(), o.peer_timeout);
        c.checkpoint = [&](const std::string& reason, const float* average, int64_t steps,
                           const std::vector<int64_t>& taken, int64_t samples, double elapsed_s) {
            write_learners_checkpoint(rc, run, reason, steps, samples, elapsed_s, average, taken);
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
    const int64_t samples = r.epoch * samples_per_epoch;
    const std::string snap_path = write_final_snapshot(
        o.output, run.snapshot(static_cast<uint64_t>(before + r.steps), static_cast<uint64_t>(samples), s.spec.seed));
    std::printf("%s: %lld local steps, %zu exchanges; compute %.1f s, exchanges and epoch sums %.1f s; last spread "
                "%.4g; the learners' average in %s\n",
                protocol.name().c_str(), static_cast<long long>(r.steps), r.peers.size(), r.compute_s, r.wait_s,
                r.spreads.empty() ? 0.0 : r.spreads.back(), snap_path.c_str());
    std::fflush(stdout);
    return 0;
}

}  // namespace rudra::dist::run
