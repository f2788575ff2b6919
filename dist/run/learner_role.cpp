// A learner of the parameter-server protocols (EASGD's included) and a leaf PS of adv and adv*.
#include "dist/run/roles.h"



#include "data/batch_stream.h"
#include "data/skip_log.h"
#include "dist/methods/easgd.h"
#include "dist/ps/learner.h"
#include "dist/ps/relay_server.h"
#include "dist/transport/messages.h"

namespace rudra::dist::run {

namespace {

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

void run_learner_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                      const data::TrainTest& sets, const placement::Binding& binding, dist::Heartbeat& heartbeat,
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
    lc.overlap = o.mode == LearnerMode::Overlap;
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

}  // namespace rudra::dist::run
