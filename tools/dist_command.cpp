// rudra dist: the parameter-server system on MPI ranks. Rank 0 is the parameter server, rank 1
// the statistics server, ranks 2.. the learners (lambda = ranks - 2); under --topology adv and
// adv* rank 0 is the root of a tree of parameter servers, with a leaf PS on each node
// (dist/ps/topology.h). All-reduce and gossip have no PS: rank 0 is their first learner
// (tools/dist_roles.cpp).
//
// Faults (docs/faults.md): every rank runs a heartbeat; rank 0 writes checkpoints (the PS:
// every --checkpoint-every, at every epoch boundary, on SIGUSR1 and when it stops; all-reduce:
// every --checkpoint-every and epoch boundary; gossip: every epoch boundary), stops the run on
// SIGTERM/SIGINT, goes on without a lost learner where the protocol allows; the other ranks end
// by themselves when rank 0 falls silent. Exit codes (tools/exit_codes.h): 0 done, 1 bad input,
// 3 stopped because a learner was lost (hardsync, all-reduce, gossip, or every learner), 4 rank 0
// was lost, 130 stopped by a signal.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "data/batch_stream.h"

#include "base/clock.h"
#include "dist/methods/allreduce.h"
#include "dist/methods/easgd.h"
#include "dist/ps/learner.h"
#include "dist/ps/parameter_server.h"
#include "dist/ps/stats_server.h"
#include "dist/ps/topology.h"
#include "dist/ps/update_rule.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/messages.h"
#include "dist/transport/mpi_transport.h"
#include "dist/transport/timeline.h"
#include "kernels/sgemm/sgemm.h"
#include "nn/atomic_file.h"
#include "nn/snapshot.h"
#include "session/metrics_log.h"
#include "session/run_folder.h"
#include "session/training_session.h"
#include "tools/commands.h"
#include "tools/dist_checkpoint.h"
#include "tools/dist_roles.h"
#include "tools/exit_codes.h"
#include "tools/rank_guard.h"
#include "tools/startup_watch.h"

namespace rudra::tools {
namespace {

namespace fs = std::filesystem;
using namespace dist_run;

// Set by the signal handlers, read by the PS between messages. Every rank takes SIGTERM, SIGINT,
// SIGHUP, SIGUSR2 (stop with a checkpoint: a closed terminal, LSF's warning action) and SIGUSR1
// (a checkpoint) (mpiexec and srun pass them to all): the PS acts on them, the others leave the
// stopping to it. Replacing MPICH's SIGUSR1 handler also keeps a rank alive when mpiexec
// -disable-auto-cleanup signals it that another rank died.
std::atomic<bool> g_stop_requested{false}, g_checkpoint_requested{false};
extern "C" void on_dist_stop_signal(int) { g_stop_requested = true; }
extern "C" void on_dist_checkpoint_signal(int) { g_checkpoint_requested = true; }

void install_signal_handlers() {
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_dist_stop_signal;
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR2}) sigaction(sig, &sa, nullptr);
    sa.sa_handler = on_dist_checkpoint_signal;
    sigaction(SIGUSR1, &sa, nullptr);
    // A file-size limit (ulimit -f) makes a write fail (EFBIG), reported as a failed write,
    // instead of killing the rank.
    std::signal(SIGXFSZ, SIG_IGN);
}

// Ends this rank at once when rank 0 (the PS, or a decentralized run's first learner) falls
// silent: what it holds is in rank 0's checkpoints.
dist::HeartbeatConfig watch_ps(const DistOptions& o, int rank, bool decentralized, StartupWatch& startup) {
    dist::HeartbeatConfig hc;
    hc.notify = {kPsRank};
    hc.watch = kPsRank;
    hc.timeout_s = o.peer_timeout;
    const char* who = decentralized ? "the first learner" : "the parameter server";
    hc.on_silent = [rank, who, out = o.output, &startup](int, double silent) {
        startup.remove_held_file();
        std::fflush(stdout);
        std::fprintf(stderr,
                     "rudra dist [rank %d]: error: %s (rank 0) has not been heard from for %.1f s: it "
                     "died or hangs. The newest checkpoint is %s (%s)\n",
                     rank, who, silent, checkpoint_path(out).c_str(), resume_hint(out).c_str());
        std::fflush(stderr);
        _exit(kExitPsLost);
    };
    return hc;
}

// Everything a role needs from the solver, net and data files.
Setup read_setup(const DistOptions& o) {
    Setup s;
    s.spec.solver = nn::load_solver_spec(o.solver);
    s.spec.net = nn::load_net_spec(s.spec.solver.net);
    if (!s.spec.net.data_layer(nn::Phase::Train))
        throw std::runtime_error(s.spec.solver.net + ": the net has no Data layer for phase TRAIN");
    s.spec.kernels = o.kernels;
    s.spec.batch = o.batch;
    s.spec.seed = o.seed >= 0 ? o.seed : (s.spec.solver.random_seed >= 0 ? s.spec.solver.random_seed : 1);
    if (o.base_lr > 0) s.spec.solver.lr.base_lr = o.base_lr;
    if (o.momentum >= 0) s.spec.solver.momentum = o.momentum;
    if (!o.warm_start.empty()) {
        s.warm = nn::read_snapshot(o.warm_start);
        s.start_samples = static_cast<int64_t>(s.warm.samples_seen);
    }
    return s;
}

// Returns the process's exit code.
int run_ps(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
           const data::TrainTest& sets, const dist::WaitPolicy& wait, dist::MpiSession& mpi, dist::Heartbeat& heartbeat) {
    const int lambda = protocol.learners();
    session::SessionSpec spec = s.spec;
    spec.kernels.conv = "own";  // the PS's net only holds the parameters: no backend to choose
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = true});
    s.release_train_images();
    if (s.resume) {
        run.restore(s.resume->snapshot, s.resume->path, session::TrainingSession::History::Required);
    } else if (!o.warm_start.empty()) {
        run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    }
    nn::ParamStore& params = run.params();
    dist::UpdateRuleConfig rc;
    rc.modulation =
        o.lr_modulation.empty() ? protocol.default_modulation() : dist::parse_lr_modulation(o.lr_modulation);
    rc.batch = run.batch() * (protocol.elastic() ? o.tau : 1);  // EASGD: one difference per tau mini-batches
    rc.momentum_compensation = o.momentum_compensation;
    rc.start_samples = s.start_samples;
    rc.reference_batch = o.reference_batch > 0 ? o.reference_batch : s.train_layer().batch_size;
    if (protocol.synchronous())
        rc.base_scale = static_cast<float>(dist::synchronous_lr_scale(lambda, rc.batch, rc.reference_batch));
    dist::UpdateRule rule(protocol, run.solver(), params, lambda, rc);
    dist::PsConfig pc;
    pc.timeline = s.timeline;
    pc.learner_ranks = s.layout.learners();
    for (int child : s.layout.children(kPsRank))
        if (s.layout.role(child) == dist::RankLayout::Role::Relay)
            pc.relays.push_back({child, s.layout.learners_below(child)});
    pc.broadcast_children = s.layout.broadcast_children(kPsRank);
    pc.stats_rank = kStatsRank;
    pc.samples_per_epoch = sets.train.size();
    pc.epochs = o.epochs;
    pc.peer_timeout_s = o.peer_timeout;
    pc.receive_ahead = o.ps_receive_ahead == "on";
    const CheckpointEvery every = parse_checkpoint_every(o.checkpoint_every);
    pc.checkpoint_every_updates = every.updates;
    pc.checkpoint_every_s = every.seconds;

    const std::string ck_path = checkpoint_path(o.output);
    const std::string snap_path = (fs::path(o.output) / "final.rudra").string();
    const std::string stale_path = (fs::path(o.output) / "staleness.json").string();
    for (const std::string& f : {ck_path, snap_path, stale_path})
        if (nn::remove_stale_tmp(f)) say("PS: removed " + f + ".tmp, left by a run that was killed while writing it");
    if (s.resume) {
        rule.restore_state(s.resume->meta.at("rule"));
        pc.elapsed_offset_s = s.resume->elapsed_s();
        pc.replay_epoch = rule.samples() % pc.samples_per_epoch == 0;
        say("PS: resuming from " + s.resume->path + " (" + s.resume->meta.value("reason", std::string("?")) +
            " checkpoint of " + s.resume->meta.value("written_at", std::string("?")) + "): epoch " +
            std::to_string(s.resume->epoch()) + ", update " + std::to_string(rule.timestamp()) + ", " +
            std::to_string(rule.samples()) + " samples" +
            (s.resume->learners() != lambda ? ", with " + std::to_string(lambda) + " learners instead of " +
                                                  std::to_string(s.resume->learners())
                                            : std::string()));
    }
    std::printf(
        "rudra dist: %s, %d learners, mini-batch %d, %s, base_lr %g x %.4g, %d epochs of %lld images, "
        "wait: spin %d then sleep %d us, output %s\n",
        protocol.name().c_str(), lambda, run.batch(), o.mode.c_str(), s.spec.solver.lr.base_lr, rc.base_scale, o.epochs,
        static_cast<long long>(pc.samples_per_epoch), wait.spin, wait.sleep_us, o.output.c_str());
    if (protocol.elastic())
        say("easgd: learners step locally with the solver's rate and exchange beta * (local - centre) every " +
            std::to_string(o.tau) + " steps, beta " + number_text(easgd_beta(o, lambda)) +
            (o.beta > 0 ? "" : " (0.9 / learners)") + "; the PS adds the differences to the centre");
    say(s.layout.describe());

    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    auto elapsed = [&] { return pc.elapsed_offset_s + seconds_since(started); };
    const nlohmann::ordered_json settings = run_settings(o, lambda);
    dist::PsHooks hooks;
    hooks.checkpoint = [&](const std::string& reason) {
        nn::Snapshot snap = run.snapshot(static_cast<uint64_t>(rule.timestamp()), static_cast<uint64_t>(rule.samples()),
                                         s.spec.seed);
        const int64_t epoch = rule.samples() / pc.samples_per_epoch;
        snap.metadata = checkpoint_metadata(reason, epoch, elapsed(), protocol.name(), settings, rule.state());
        nn::write_snapshot(ck_path, snap);
        if (reason != "periodic" && reason != "epoch")
            say("PS: checkpoint (" + reason + ") at update " + std::to_string(rule.timestamp()) + ", epoch " +
                std::to_string(epoch) + ": " + ck_path);
    };
    hooks.finished = [&] {
        nn::write_snapshot(snap_path, run.snapshot(static_cast<uint64_t>(rule.timestamp()),
                                                   static_cast<uint64_t>(rule.samples()), s.spec.seed));
        rule.staleness().write_json(stale_path, protocol.name());
    };
    hooks.stop_requested = [] { return g_stop_requested.load(); };
    hooks.checkpoint_requested = [] { return g_checkpoint_requested.exchange(false); };
    hooks.log = say;
    hooks.heartbeat = &heartbeat;
    dist::ParameterServer ps(t, rule, params, pc, hooks);
    training_starts(t, s);
    const dist::PsResult r = ps.run();

    if (r.end == dist::PsResult::End::Finished) {
        std::printf("PS: %lld updates, %lld gradients (%lld more arrived after the last epoch and were dropped), "
                    "staleness mean %.3f max %lld, %.1f s; snapshot %s, staleness %s\n",
                    static_cast<long long>(r.updates), static_cast<long long>(rule.staleness().gradients()),
                    static_cast<long long>(r.dropped_gradients), rule.staleness().mean(),
                    static_cast<long long>(rule.staleness().max()), r.elapsed_s, snap_path.c_str(), stale_path.c_str());
    } else {
        std::printf("PS: stopped at update %lld after %.1f s: %s. The newest checkpoint is %s; %s%s\n",
                    static_cast<long long>(r.updates), r.elapsed_s, r.why.c_str(), ck_path.c_str(),
                    resume_hint(o.output).c_str(),
                    r.end == dist::PsResult::End::LearnerLost ? " (with as many learners as answer)" : "");
    }
    std::fflush(stdout);
    const int code = r.end == dist::PsResult::End::Finished   ? 0
                     : r.end == dist::PsResult::End::Stopped ? kExitStopped
                                                             : kExitLearnerLost;
    if (!r.lost_ranks.empty()) {
        // A lost rank may be stopped rather than dead: only ending the whole job frees mpiexec,
        // and MPI_Finalize would wait for it forever.
        std::string ranks;
        for (int rank : r.lost_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
        say("PS: ending the job (rank " + ranks + " lost) with exit code " + std::to_string(code));
        mpi.peer_lost();
        dist::MpiSession::end_job(code);
    }
    return code;
}

// This process's rank as its launcher numbered it (before MPI is up), or -1.
int launcher_rank() {
    for (const char* name : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
    return -1;
}

// Rank 0 takes the output folder (session/run_folder.h: refused when another run's files or a
// live run are there), checks that the --timeline trace can be written, clears the parts of
// killed runs' traces, and sends every rank the run's identity; the others wait for it, so that
// no rank writes into the folder before it is this run's. Returns the identity.
std::string claim_output(const DistOptions& o, const std::optional<DistCheckpoint>& resume, dist::Transport& t,
                         const StartupWatch& startup, std::optional<session::RunFolder>& folder) {
    std::vector<char> id;
    if (t.rank() != kPsRank) {
        if (!t.recv_while(kPsRank, dist::kRunIdentity, id, startup.keep_waiting()))
            throw dist::PeerError(kPsRank, "rank 0 did not take the output folder within the start-up allowance");
        return std::string(id.begin(), id.end());
    }
    std::error_code ec;
    const bool into_checkpoint_folder =
        resume && fs::weakly_canonical(o.output, ec) == fs::weakly_canonical(fs::path(resume->path).parent_path(), ec);
    const auto start = into_checkpoint_folder ? session::RunFolder::Start::Resume
                       : o.overwrite          ? session::RunFolder::Start::Overwrite
                                              : session::RunFolder::Start::Fresh;
    folder.emplace(o.output, start, "rudra dist --resume " + o.output);
    if (!o.timeline.empty()) nn::check_can_write(o.timeline, "the --timeline trace");
    const fs::path parts = fs::path(o.output) / "timeline-parts";
    fs::remove_all(parts, ec);
    if (!o.timeline.empty()) {
        fs::create_directories(parts, ec);
        if (ec) throw nn::WriteError(parts.string() + ": cannot create the folder of the trace's parts: " + ec.message());
    }
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    const std::string text = std::string(host) + "-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
    for (int r = 1; r < t.size(); ++r)
        if (!t.send_while(r, dist::kRunIdentity, text.data(), text.size(), startup.keep_waiting()))
            throw dist::PeerError(r, "rank " + std::to_string(r) + " did not take the run's identity within the start-up allowance");
    return text;
}

}  // namespace

int run_dist(const DistOptions& options, int* argc, char*** argv) {
    // From here on, this process is the rank. Its handlers are in place before any stop signal
    // can reach it: a stop requested while the rank starts (a batch system's signal can come
    // that early) is kept for the PS, which stops with a checkpoint as soon as its loop starts.
    run_under_rank_guard(install_signal_handlers);
    const auto process_start = std::chrono::steady_clock::now();
    // From before MPI_Init, which waits for every rank of the job: a rank that dies while
    // starting must not leave the others waiting forever.
    StartupWatch startup(launcher_rank(), options.startup_timeout, options.peer_timeout,
                         [] { return g_stop_requested.load(); });
    dist::MpiSession mpi(argc, argv);
    install_signal_handlers();  // again: MPI_Init installs its own for SIGUSR1
    DistOptions o = options;
    dist::WaitPolicy wait = dist::WaitPolicy::for_load(dist::MpiSession::ranks_on_this_node(), o.threads,
                                                       static_cast<int>(std::thread::hardware_concurrency()));
    if (o.wait_spin >= 0) wait.spin = o.wait_spin;
    if (o.wait_sleep_us >= 0) wait.sleep_us = o.wait_sleep_us;
    dist::MpiTransport transport(wait);
    const int rank = transport.rank();
    startup.mpi_started(rank);
    int code = 0;
    try {
        kernels::selected_micro_kernel();  // a bad RUDRA_ISA or RUDRA_SGEMM_BLOCKS, before any work
        if (transport.size() < 3)
            throw std::runtime_error(
                "rudra dist needs at least 3 ranks (parameter server, statistics server, a learner); got " +
                std::to_string(transport.size()));
        std::optional<DistCheckpoint> resume;
        if (!o.resume.empty()) {
            resume = read_dist_checkpoint(o.resume);
            apply_checkpoint_settings(o, *resume);
        }
        const dist::Protocol::Kind kind = dist::Protocol::kind_named(o.protocol);
        const bool gossip = dist::Protocol::is_gossip(kind), easgd = kind == dist::Protocol::Kind::Easgd;
        if (o.given.count("--beta") && !(o.beta > 0 && o.beta <= 1))
            throw std::runtime_error("--beta must be in (0, 1], got " + number_text(o.beta));
        if (o.given.count("--tau") && !easgd && !gossip)
            throw std::runtime_error("--tau is a setting of --protocol easgd, gossip-pull and gossip-push");
        if (o.given.count("--beta") && !easgd)
            throw std::runtime_error("--beta is a setting of --protocol easgd");
        if (o.solver.empty()) throw std::runtime_error("a SOLVER file is required (or --resume CHECKPOINT|OUTDIR)");
        if (!fs::is_regular_file(o.solver)) throw std::runtime_error(o.solver + ": solver file not found");
        if (!(o.peer_timeout > 0)) throw std::runtime_error("--peer-timeout must be a positive number of seconds");
        parse_checkpoint_every(o.checkpoint_every);  // checked on every rank
        // No PS: every rank but the statistics server learns.
        const bool decentralized = dist::Protocol::is_decentralized(kind);
        // Heartbeats from here on: rank 0 sends them to every rank, the others to rank 0 and end
        // when it falls silent; until training starts, rank 0 ends the job when another rank does.
        dist::HeartbeatConfig beats = watch_ps(o, rank, decentralized, startup);
        if (rank == kPsRank) {
            beats = dist::HeartbeatConfig();
            beats.notify = ranks_from(1, transport.size());
        }
        // A live rank's heartbeats can wait behind its large messages: while one of those waits
        // here, the rank is silent only past 4 times the timeout.
        beats.pending_grace_s = 4 * o.peer_timeout;
        dist::Heartbeat heartbeat(transport, beats);
        const StartupWatch::HeartbeatsWatched watched =
            rank == kPsRank ? startup.watch(heartbeat, transport.size()) : StartupWatch::HeartbeatsWatched(nullptr);
        if (rank == kPsRank) {
            if (const std::string warning = launcher_warning(); !warning.empty())
                std::fprintf(stderr, "rudra dist: warning: %s\n", warning.c_str());
        }
        // The output folder is this run's before any rank writes to it.
        std::optional<session::RunFolder> folder;
        const std::string run_id = claim_output(o, resume, transport, startup, folder);
        const std::string parts_dir = (fs::path(o.output) / "timeline-parts").string();
        const dist::Topology topology = dist::parse_topology(o.topology);
        if (topology != dist::Topology::Base) {
            if (decentralized || easgd)
                throw std::runtime_error("--topology " + o.topology + " is a parameter-server tree for hardsync, "
                                         "softsync and async, not for --protocol " + o.protocol);
            if (o.lr_modulation == "per-gradient")
                throw std::runtime_error("--lr-modulation per-gradient weighs each gradient before the sum, and a "
                                         "leaf PS sends sums: use average or none with --topology " + o.topology);
        } else {
            for (const char* opt : {"--ranks-per-node", "--fan-out"})
                if (o.given.count(opt))
                    throw std::runtime_error(std::string(opt) + " is a setting of --topology adv and adv*");
        }
        if (o.given.count("--broadcast-fan-out") && topology != dist::Topology::AdvStar)
            throw std::runtime_error("--broadcast-fan-out is a setting of --topology adv*");
        std::vector<int> nodes(static_cast<size_t>(transport.size()), 0);
        if (topology != dist::Topology::Base) {
            if (o.ranks_per_node > 0) {
                if (transport.size() % o.ranks_per_node != 0)
                    throw std::runtime_error("--ranks-per-node " + std::to_string(o.ranks_per_node) +
                                             " does not divide the " + std::to_string(transport.size()) +
                                             " ranks into nodes");
                for (int r = 0; r < transport.size(); ++r) nodes[static_cast<size_t>(r)] = r / o.ranks_per_node;
            } else {
                nodes = dist::MpiSession::node_of_each_rank();  // collective: every rank is here
            }
        }
        dist::RankLayout layout;
        if (!decentralized) layout = dist::RankLayout::make(topology, nodes, o.fan_out, o.broadcast_fan_out);
        // Under adv and adv*, a rank also beats to the ranks besides rank 0 that it sends to or
        // receives from (its leaf PS, its learners, its broadcast parent and children), since
        // each judges its senders by their heartbeats.
        if (topology != dist::Topology::Base && rank != kPsRank)
            for (int peer : layout.peers(rank)) heartbeat.notify(peer);
        const int lambda = decentralized ? transport.size() - 1 : static_cast<int>(layout.learners().size());
        if (o.mode != "base" && o.mode != "overlap") throw std::runtime_error("--mode must be base or overlap");
        const dist::Protocol protocol = dist::Protocol::parse(o.protocol, lambda, o.n);  // on every rank
        if (!o.lr_modulation.empty()) dist::parse_lr_modulation(o.lr_modulation);
        const std::vector<int> learner_ranks =
            decentralized ? decentralized_learner_ranks(transport.size()) : layout.learners();
        const auto [straggler, factor] = parse_straggler(o.straggler, learner_ranks);  // on every rank
        if (straggler >= 0 && rank == kPsRank)
            say("rank " + std::to_string(straggler) + " is a straggler: its compute is slowed " +
                o.straggler.substr(o.straggler.find(':') + 1) + " times (it sleeps)");
        const double straggle = rank == straggler ? factor : 1.0;
        omp_set_num_threads(o.threads);
        const Binding binding = bind_threads(o.bind, dist::MpiSession::ranks_on_this_node(),
                                             dist::MpiSession::rank_on_this_node(), o.threads);
        if (!binding.message.empty() && rank == kPsRank) std::printf("rank 0 %s\n", binding.message.c_str());
        Setup s = read_setup(o);
        s.process_start = process_start;
        s.layout = layout;
        std::unique_ptr<dist::Timeline> timeline;
        if (!o.timeline.empty()) {
            const std::string role = decentralized ? (rank == kStatsRank ? "statistics server" : "learner")
                                                   : layout.role_name(rank);
            timeline = std::make_unique<dist::Timeline>(rank, "rank " + std::to_string(rank) + ": " + role);
            s.timeline = timeline.get();
        }
        s.resume = std::move(resume);
        s.stop_requested = [] { return g_stop_requested.load(); };
        s.keep_starting = startup.keep_waiting();
        s.started = [&startup] { startup.training_started(); };
        // One rank per node reads and decompresses the data set (with 32 ranks on 2 cores, each
        // decompressing Fashion-MNIST itself took 22 s of start-up), and the node's ranks share
        // that one copy of the training images, mapped from a memory file.
        // Sets read sample by sample from their files (LMDB, image files) are opened by every
        // rank: an LMDB's pages are shared through the page cache, image files are read as drawn.
        const session::DataPlan plan = session::plan_data(o.data, s.spec.net);
        data::TrainTest sets;
        if (plan.streamed()) {
            sets = session::load_data(plan, o.data);
        } else {
            dist::MpiSession::NodeShare share{o.node_data_dir, wait, startup.keep_waiting(),
                                              [&startup](const std::string& path) { startup.hold_file(path); }, {}, {}};
            data::SharedBytes node_copy = dist::MpiSession::map_on_node(
                [&] { return data::pack_train_test(session::load_data(plan, o.data)); }, share);
            if (!share.problem.empty())
                std::fprintf(stderr, "rank %d: the node's ranks do not share one copy of the data set (%s); each holds its own\n",
                             rank, share.problem.c_str());
            if (!share.stale_removed.empty())
                std::printf("rank %d: removed %zu data-set file(s) of jobs that died from %s\n", rank,
                            share.stale_removed.size(), o.node_data_dir.c_str());
            // The training set alone keeps the copy (the test set is copied out): letting it go frees it.
            sets = data::view_train_test(node_copy.data, node_copy.size, std::move(node_copy.keep));
            sets.notes = plan.notes;
            session::add_mean(plan, o.data, sets);
        }
        // The ranks that do not train (the PS, leaf PSs, the statistics server) let the training
        // images go once their nets are set up; the labels stay (they count the epoch).
        s.release_train_images = [&sets] { sets.train.release_pixels(); };
        const int64_t done_epochs = s.start_samples / std::max<int64_t>(1, static_cast<int64_t>(sets.train.size()));
        if (!s.resume && done_epochs >= o.epochs)
            throw std::runtime_error(o.warm_start + " has trained " + std::to_string(done_epochs) +
                                     " epochs already; --epochs is the total and must be larger");
        if (decentralized) {
            dist::MpiSumGroup group(rank != kStatsRank, wait);  // collective: every rank builds it
            fs::create_directories(o.output);
            try {
                if (rank == kStatsRank) run_stats(o, s, transport, protocol, sets, heartbeat);
                else if (gossip) code = run_gossip_role(o, s, transport, group, protocol, sets, binding, heartbeat, straggle);
                else code = run_allreduce_role(o, s, transport, group, sets, binding, heartbeat, straggle);
            } catch (const dist::PeerError& e) {
                if (rank != kPsRank) throw;
                // The first learner noticed a lost rank (and told the statistics server): no
                // decentralized method goes on without one of its learners. The others may wait
                // for it forever: only ending the whole job frees them.
                const std::string who = e.peer() >= 0 ? "rank " + std::to_string(e.peer()) : std::string("a rank");
                say(protocol.name() + ": " + who + " lost (" + e.what() + "). The newest checkpoint is " +
                    checkpoint_path(o.output) + "; " + resume_hint(o.output) +
                    " (with as many learners as answer)");
                say(protocol.name() + ": ending the job with exit code " + std::to_string(kExitLearnerLost));
                usleep(500000);  // the statistics server logs the loss meanwhile
                mpi.peer_lost();
                dist::MpiSession::end_job(kExitLearnerLost);
            }
        } else if (rank == kPsRank) {
            fs::create_directories(o.output);
            code = run_ps(o, s, transport, protocol, sets, wait, mpi, heartbeat);
        } else if (rank == kStatsRank) {
            fs::create_directories(o.output);
            run_stats(o, s, transport, protocol, sets, heartbeat);
        } else if (layout.role(rank) == dist::RankLayout::Role::Relay) {
            run_relay_role(o, s, transport, protocol, sets, heartbeat);
        } else {
            run_learner_role(o, s, transport, protocol, sets, binding, heartbeat, straggle);
        }
        // The role is over: signals take their default action again (a rank waiting in
        // MPI_Finalize can be ended), and the heartbeats still on their way are received once
        // every rank is here. A rank that never comes is gone: MPI_Finalize would wait for it.
        heartbeat.stop();
        for (int sig : {SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
        if (timeline) {
            try {
                nn::write_file_atomically(dist::timeline_part_path(parts_dir, run_id, rank), timeline->events_json());
            } catch (const nn::WriteError& e) {  // the run is done: its trace lacks this rank's part
                std::fprintf(stderr, "rudra dist [rank %d]: warning: %s\n", rank, e.what());
            }
        }
        const auto after = [&](double seconds) {
            return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(seconds));
        };
        // The barrier and the drain each within the peer timeout: a rank that never comes, or
        // sends fewer heartbeats than it says, is gone (MPI_Finalize would wait for it).
        if (!transport.barrier_while(dist::until(after(o.peer_timeout))) ||
            !heartbeat.drain(dist::until(after(o.peer_timeout))))
            mpi.peer_lost();
        // Every rank that is still here has written its part of the timeline.
        if (timeline && rank == kPsRank) {
            try {
                const int parts = dist::merge_timeline_parts(o.timeline, parts_dir, run_id, transport.size());
                say("timeline: " + o.timeline + " (" + std::to_string(parts) + " of " +
                    std::to_string(transport.size()) + " ranks; open it in Perfetto or chrome://tracing)");
            } catch (const nn::WriteError& e) {
                std::fprintf(stderr, "rudra dist [rank 0]: error: the trace could not be written: %s (the parts stay in %s)\n",
                             e.what(), parts_dir.c_str());
                if (code == 0) code = kExitWriteFailed;
            }
        }
    } catch (const nn::WriteError& e) {
        // Disk full, a quota, permissions: no fault of the input or of a peer. What was written
        // before stays whole (a checkpoint is replaced only by a complete one).
        const bool trained = startup.started();
        startup.remove_held_file();
        const std::string ck = checkpoint_path(o.output);
        std::string kept = !trained                 ? "nothing was trained"
                           : fs::exists(ck)         ? "the newest checkpoint written, " + ck + ", is whole"
                                                    : "no checkpoint had been written yet";
        std::fflush(stdout);
        std::fprintf(stderr, "rudra dist [rank %d]: error: a file could not be written: %s. Every rank stops (exit code %d); %s%s\n",
                     rank, e.what(), kExitWriteFailed, kept.c_str(),
                     trained && fs::exists(ck) ? (". Once the cause is fixed, " + resume_hint(o.output)).c_str() : "");
        std::fflush(stderr);
        usleep(300000);  // let mpiexec relay the message before MPI_Abort ends its proxies
        dist::MpiSession::abort_all(kExitWriteFailed);
    } catch (const std::exception& e) {
        startup.remove_held_file();
        // The same bad input fails on every rank: rank 0 reports it and ends them all; a rank
        // that fails alone reports after a moment and ends them all.
        if (rank != kPsRank) sleep(2);
        std::fflush(stdout);
        std::fprintf(stderr, "rudra dist [rank %d]: error: %s\n", rank, e.what());
        std::fflush(stderr);
        usleep(300000);  // let mpiexec relay the message before MPI_Abort ends its proxies
        dist::MpiSession::abort_all(1);
    }
    return code;
}

}  // namespace rudra::tools
