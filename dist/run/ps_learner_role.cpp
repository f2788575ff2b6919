// A learner of hardsync, softsync and async, the session every learner of the parameter-server
// family starts from, and a leaf PS of adv and adv*.
#include <cstring>

#include "data/batch_stream.h"
#include "data/skip_log.h"
#include "dist/ps/learner.h"
#include "dist/ps/relay_server.h"
#include "dist/run/roles.h"
#include "dist/transport/messages.h"

namespace rudra::dist::run {

namespace {

int learner_stream(const RoleContext& c) { return kFirstLearner + c.s.layout.learner_index(c.transport.rank()); }

// Under --conv-backend auto the first learner measures the kernels and sends its choices to the
// others, so that every learner computes with the same ones.
bool kernels_measured_once(const RoleContext& c) {
    return c.s.spec.kernels.uses_auto() && c.s.layout.learners().size() > 1;
}

session::SessionSpec learner_spec(const RoleContext& c) {
    session::SessionSpec spec = c.s.spec;
    spec.seed = c.s.spec.seed + learner_stream(c);
    const std::vector<int>& learners = c.s.layout.learners();
    if (kernels_measured_once(c) && c.transport.rank() != learners[0]) {
        std::vector<char> text;
        if (!c.transport.recv_while(learners[0], dist::kKernelChoices, text, c.s.keep_starting))
            throw dist::PeerError(learners[0], "rank " + std::to_string(learners[0]) +
                                                   " did not send the --conv-backend choices within the start-up time");
        spec.kernels.conv.assign(text.begin(), text.end());
    }
    return spec;
}

// A learner's records skipped under --bad-image skip, named at its end (the first
// SkipLog::kKeep) and counted.
void report_skipped(int rank, const data::TrainTest& sets) {
    if (!sets.skipped || sets.skipped->count() == 0) return;
    for (const std::string& what : sets.skipped->take_fresh())
        say("rank " + std::to_string(rank) + ": skipped a record (--bad-image skip): " + what);
    say("rank " + std::to_string(rank) + ": " + std::to_string(sets.skipped->count()) +
        " record(s) skipped (--bad-image skip)");
}

}  // namespace

PsFamilyLearner::PsFamilyLearner(const RoleContext& c, bool solver, int64_t minibatches_done)
    : run(learner_spec(c), c.sets, {.train_net = true, .test_net = false, .solver = solver}),
      prefetch(c.sets.train, run.train_transform(), run.batch(), sample_stream_seed(c.s.spec.seed, learner_stream(c)),
               static_cast<uint64_t>(minibatches_done) * static_cast<uint64_t>(run.batch()), c.binding.helper_thread,
               c.o.data.decode_threads, c.sets.skipped.get()) {
    run.skip_passes(static_cast<uint64_t>(minibatches_done));
    const std::vector<int>& learners = c.s.layout.learners();
    if (kernels_measured_once(c) && c.transport.rank() == learners[0]) {
        const std::string chosen = run.resolved_kernels().conv;
        for (size_t i = 1; i < learners.size(); ++i)
            c.transport.send(learners[i], dist::kKernelChoices, chosen.data(), chosen.size());
        say("rank " + std::to_string(c.transport.rank()) + ": --conv-backend " + c.s.spec.kernels.conv +
            " for the learners: " + chosen);
    }
}

int run_ps_learner_role(const RoleContext& c) {
    const int rank = c.transport.rank();
    const Setup& s = c.s;
    // A resumed learner goes on after the samples of its gradients in the checkpoint's updates.
    PsFamilyLearner learner(c, false, s.resume ? s.resume->applied(s.layout.learner_index(rank)) : 0);
    session::TrainingSession& run = learner.run;
    nn::ParamStore& params = run.params();
    dist::LearnerWork work;
    work.param_floats = params.size();
    work.load_weights = [&](const float* w) { std::memcpy(params.values(), w, sizeof(float) * params.size()); };
    work.use_weights = [&](float* w) { run.train_net().bind_values(w); };  // no copy
    work.compute = slowed([&]() { return run.compute_gradient(learner.prefetch.next()); }, c.straggle);
    work.gradients = params.grads();
    dist::LearnerConfig lc;
    lc.ps_rank = s.layout.parent(rank);  // rank 0, or under adv the leaf PS of this node
    lc.broadcast_parent = s.layout.broadcast_parent(rank);  // adv*: the weights come down a tree
    lc.broadcast_children = s.layout.broadcast_children(rank);
    lc.peer_timeout_s = c.o.peer_timeout;
    lc.peer_alive = [&heartbeat = c.heartbeat, timeout = c.o.peer_timeout](int r) {
        return heartbeat.heard_within(r, timeout);
    };
    lc.stats_rank = kStatsRank;
    lc.overlap = c.o.mode == LearnerMode::Overlap;
    lc.synchronous = c.protocol.synchronous();
    lc.wait_for_pull = c.o.max_staleness >= 0;
    lc.wire = dist::wire_named(c.o.wire);
    lc.timeline = s.timeline;
    lc.log = say;
    training_starts(c.transport, s);
    dist::run_learner(c.transport, lc, work);
    report_skipped(rank, c.sets);
    return 0;
}

int run_relay_role(const RoleContext& c) {
    const Setup& s = c.s;
    session::SessionSpec spec = s.spec;
    spec.kernels.conv = "own";  // the net only sizes the parameters: no backend to choose
    const session::TrainingSession run(spec, c.sets, {.train_net = true, .test_net = false, .solver = false});
    s.release_train_images();
    const int rank = c.transport.rank();
    dist::RelayConfig rc;
    rc.parent = s.layout.parent(rank);
    rc.stats_rank = kStatsRank;
    rc.children = s.layout.children(rank);
    rc.param_floats = run.params().size();
    const auto below = static_cast<int64_t>(s.layout.learners_below(rank).size());
    const auto lambda = static_cast<int64_t>(s.layout.learners().size());
    rc.share = std::max<int64_t>(1, c.protocol.gradients_per_update() * below / lambda);
    rc.peer_timeout_s = c.o.peer_timeout;
    rc.timeline = s.timeline;
    rc.pulls_weights = s.layout.topology() != dist::Topology::AdvStar;
    rc.wire = dist::wire_named(c.o.wire);
    training_starts(c.transport, s);
    dist::run_relay(c.transport, rc, c.heartbeat, say);
    return 0;
}

}  // namespace rudra::dist::run
