// A learner of all-reduce SGD (dist/methods/allreduce.h): rank 0 and ranks 2.. (rank 1 is the
// statistics server).
#include <cstdio>

#include "data/batch_stream.h"
#include "dist/methods/allreduce.h"
#include "dist/ps/update_rule.h"
#include "dist/run/roles.h"
#include "session/exit_codes.h"

namespace rudra::dist::run {

// All-reduce: rank 0 and ranks 2.. are learners, each with its own solver, all starting from the
// same weights and stepping alike; rank 0 sends the weights to the statistics server at every
// epoch boundary, writes the checkpoints and final.rudra. Returns the exit code.
int run_allreduce_role(const RoleContext& rc) {
    const DistOptions& o = rc.o;
    const Setup& s = rc.s;
    const data::TrainTest& sets = rc.sets;
    dist::Transport& t = rc.transport;
    const int rank = t.rank(), lambda = rc.group->members();
    session::SessionSpec spec = s.spec;  // one seed: the same initial weights on every learner
    // As hardsync: one update of lambda*mu samples takes alpha0 * sqrt(lambda*mu / B).
    const int mu = s.spec.batch > 0 ? s.spec.batch : s.train_layer().batch_size;
    const int reference = o.reference_batch > 0 ? o.reference_batch : s.train_layer().batch_size;
    spec.solver.lr.base_lr *= dist::synchronous_lr_scale(lambda, mu, reference);
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = true});
    if (!o.warm_start.empty()) run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    const int64_t resumed = resumed_steps(rc, run);
    const int64_t start_samples = s.first_samples();
    if (rank == kPsRank)
        say("allreduce: " + std::to_string(lambda) + " learners, each step " + std::to_string(lambda) + " x " +
            std::to_string(run.batch()) + " samples at base_lr " + std::to_string(spec.solver.lr.base_lr) +
            " (alpha0 * sqrt(lambda*mu/" + std::to_string(reference) + "))");
    // Each learner's own stream; a resumed one goes on after the mini-batches it has taken.
    data::Prefetcher prefetch(sets.train, run.train_transform(), run.batch(),
                              sample_stream_seed(s.spec.seed, rank),
                              static_cast<uint64_t>(resumed) * static_cast<uint64_t>(run.batch()), rc.binding.helper_thread,
                              o.data.decode_threads, sets.skipped.get());
    nn::ParamStore& params = run.params();
    dist::AllreduceWork work;
    work.param_floats = params.size();
    work.gradients = params.grads();
    work.final_after = dist::final_gradients_by_layer(run.train_net());
    work.compute = slowed(
        [&](const std::function<void(size_t)>& after_layer) { return run.compute_gradient(prefetch.next(), after_layer); },
        rc.straggle);
    const int64_t start_iteration = s.resume ? resumed : s.start_samples / (int64_t(lambda) * run.batch());
    work.apply = [&](int64_t step) { run.solver().apply(params.grads(), start_iteration + step); };
    work.weights = [&] { return static_cast<const float*>(params.values()); };
    dist::AllreduceConfig c;
    if (rank == kPsRank) {
        c.silent_peer = silent_peer(rc.heartbeat, t.size(), o.peer_timeout);
        c.checkpoint = [&](const std::string& reason, int64_t steps, int64_t samples, double elapsed_s) {
            write_learners_checkpoint(rc, run, reason, start_iteration + steps, samples, elapsed_s);
        };
    }
    c.checkpoint_every = parse_checkpoint_every(o.checkpoint_every);
    c.stop_requested = s.stop_requested;
    c.wire = dist::wire_named(o.wire);
    c.timeline = s.timeline;
    c.stats_rank = kStatsRank;
    c.batch = run.batch();
    c.samples_per_epoch = static_cast<int64_t>(sets.train.size());
    c.epochs = o.epochs;
    c.start_samples = start_samples;
    c.start_steps = start_iteration;
    c.elapsed_offset_s = s.elapsed_offset_s();
    c.replay_epoch = replays_epoch(s, c.samples_per_epoch);
    training_starts(t, s);
    const dist::AllreduceSummary r = dist::run_allreduce_learner(t, *rc.group, c, work);
    if (rank != kPsRank) return 0;
    if (r.stopped) {
        say("allreduce: stopped by a signal at step " + std::to_string(start_iteration + r.steps) +
            "; " + resume_hint(o.output));
        return session::kExitStopped;
    }
    const std::string snap_path = write_final_snapshot(
        o.output, run.snapshot(static_cast<uint64_t>(start_iteration + r.steps), static_cast<uint64_t>(r.samples), s.spec.seed));
    std::printf("allreduce: %lld steps; compute %.1f s, all-reduce wait %.1f s (overlap ratio %.3f); snapshot %s\n",
                static_cast<long long>(r.steps), r.compute_s, r.wait_s,
                r.compute_s + r.wait_s > 0 ? r.compute_s / (r.compute_s + r.wait_s) : 0.0, snap_path.c_str());
    std::fflush(stdout);
    return 0;
}

}  // namespace rudra::dist::run
