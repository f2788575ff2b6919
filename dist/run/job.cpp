// rudra dist: the parameter-server system on MPI ranks. Rank 0 is the parameter server, rank 1
// the statistics server, ranks 2.. the learners (lambda = ranks - 2); under --topology adv and
// adv* rank 0 is the root of a tree of parameter servers, with a leaf PS on each node
// (dist/ps/topology.h). All-reduce and gossip have no PS: rank 0 is their first learner
// (dist/run/roles.cpp).
//
// Faults (docs/faults.md): every rank runs a heartbeat; rank 0 writes checkpoints (the PS:
// every --checkpoint-every, at every epoch boundary, on SIGUSR1 and when it stops; all-reduce:
// every --checkpoint-every and epoch boundary; gossip: every epoch boundary), stops the run on
// SIGTERM/SIGINT, goes on without a lost learner where the protocol allows; the other ranks end
// by themselves when rank 0 falls silent. Exit codes (session/exit_codes.h): 0 done, 1 bad input,
// 3 stopped because a learner was lost (hardsync, all-reduce, gossip, or every learner), 4 rank 0
// was lost, 130 stopped by a signal.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "base/clock.h"
#include "dist/ps/topology.h"
#include "dist/run/checkpoint.h"
#include "dist/run/methods.h"
#include "dist/run/options.h"
#include "dist/run/rank_guard.h"
#include "dist/run/roles.h"
#include "dist/run/startup_watch.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/messages.h"
#include "dist/transport/mpi_transport.h"
#include "dist/transport/timeline.h"
#include "kernels/sgemm/sgemm.h"
#include "nn/atomic_file.h"
#include "placement/binding.h"
#include "session/exit_codes.h"
#include "session/run_folder.h"
#include "session/stop_signals.h"
#include "session/training_session.h"

namespace rudra::dist::run {
namespace {

namespace fs = std::filesystem;

// Every rank installs the stop signals (session/stop_signals.h; mpiexec and srun pass them to
// all): the PS, or a decentralized run's ranks, act on them, the others leave the stopping to it.
// Replacing MPICH's SIGUSR1 handler also keeps a rank alive when mpiexec -disable-auto-cleanup
// signals it that another rank died.

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
        _exit(session::kExitPsLost);
    };
    return hc;
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

// The settings that need no rank's help, checked on every rank (a resumed run's with the
// checkpoint's settings applied).
void check_settings(const DistOptions& o, const Method& method, dist::Topology topology) {
    if (o.given.count("--beta") && !(o.beta > 0 && o.beta <= 1))
        throw std::runtime_error("--beta must be in (0, 1], got " + number_text(o.beta));
    check_method_options(o, method.kind);
    if (o.solver.empty()) throw std::runtime_error("a SOLVER file is required (or --resume CHECKPOINT|OUTDIR)");
    if (!fs::is_regular_file(o.solver)) throw std::runtime_error(o.solver + ": solver file not found");
    if (!(o.peer_timeout > 0)) throw std::runtime_error("--peer-timeout must be a positive number of seconds");
    parse_checkpoint_every(o.checkpoint_every);
    if (topology != dist::Topology::Base) {
        if (!method.trees)
            throw std::runtime_error("--topology " + o.topology + " is a parameter-server tree for " +
                                     method_names([](const Method& m) { return m.trees; }) + ", not for --protocol " +
                                     o.protocol);
        for (const auto& [opt, set] : {std::pair{"--backup", o.backup > 0}, std::pair{"--max-staleness", o.max_staleness >= 0}})
            if (set)
                throw std::runtime_error(std::string(opt) + " refuses single gradients at the PS, and a leaf PS sends "
                                         "sums: use --topology base with " + opt);
        if (o.lr_modulation == "per-gradient")
            throw std::runtime_error("--lr-modulation per-gradient weighs each gradient before the sum, and a "
                                     "leaf PS sends sums: use average or none with --topology " + o.topology);
    } else {
        for (const char* opt : {"--ranks-per-node", "--fan-out"})
            if (o.given.count(opt)) throw std::runtime_error(std::string(opt) + " is a setting of --topology adv and adv*");
    }
    if (o.given.count("--broadcast-fan-out") && topology != dist::Topology::AdvStar)
        throw std::runtime_error("--broadcast-fan-out is a setting of --topology adv*");
    dist::wire_named(o.wire);  // a bad name, from a checkpoint's settings, throws here
}

// The PS protocols' rank layout (empty for the decentralized methods). With a tree, the node of
// each rank is asked of MPI (collective: every rank is here) unless --ranks-per-node emulates nodes.
dist::RankLayout make_layout(const DistOptions& o, dist::Topology topology, bool decentralized, int size) {
    std::vector<int> nodes(static_cast<size_t>(size), 0);
    if (topology != dist::Topology::Base) {
        if (o.ranks_per_node > 0) {
            if (size % o.ranks_per_node != 0)
                throw std::runtime_error("--ranks-per-node " + std::to_string(o.ranks_per_node) +
                                         " does not divide the " + std::to_string(size) + " ranks into nodes");
            for (int r = 0; r < size; ++r) nodes[static_cast<size_t>(r)] = r / o.ranks_per_node;
        } else {
            nodes = dist::MpiSession::node_of_each_rank();
        }
    }
    if (decentralized) return {};
    return dist::RankLayout::make(topology, nodes, o.fan_out, o.broadcast_fan_out);
}

// The data set. One rank per node reads and decompresses an in-memory set (with 32 ranks on 2
// cores, each decompressing Fashion-MNIST itself took 22 s of start-up), and the node's ranks share
// that one copy of the training images, mapped from a memory file. Sets read sample by sample from
// their files (LMDB, image files) are opened by every rank: an LMDB's pages are shared through the
// page cache, image files are read as drawn.
data::TrainTest load_sets(const DistOptions& o, const Setup& s, int rank, const dist::WaitPolicy& wait,
                          StartupWatch& startup) {
    const session::DataPlan plan = session::plan_data(o.data, s.spec.net);
    if (plan.streamed()) return session::load_data(plan, o.data);
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
    data::TrainTest sets = data::view_train_test(node_copy.data, node_copy.size, std::move(node_copy.keep));
    sets.notes = plan.notes;
    session::add_mean(plan, o.data, sets);
    return sets;
}

// A decentralized run's rank: the statistics server or a learner. No such method goes on without
// one of its learners: when the first learner notices a lost rank (and has told the statistics
// server), it ends the whole job, since the others may wait for the lost one forever.
int run_decentralized_rank(const RoleContext& role, const Method& method, const DistOptions& o, dist::MpiSession& mpi,
                           const dist::WaitPolicy& wait) {
    const int rank = role.transport.rank();
    dist::MpiSumGroup group(rank != kStatsRank, wait);  // collective: every rank builds it
    fs::create_directories(o.output);
    RoleContext c = role;
    c.group = &group;
    try {
        return rank == kStatsRank ? run_stats_role(c) : method.learner(c);
    } catch (const dist::PeerError& e) {
        if (rank != kPsRank) throw;
        const std::string who = e.peer() >= 0 ? "rank " + std::to_string(e.peer()) : std::string("a rank");
        say(c.protocol.name() + ": " + who + " lost (" + e.what() + "). The newest checkpoint is " +
            checkpoint_path(o.output) + "; " + resume_hint(o.output) + " (with as many learners as answer)");
        usleep(500000);  // the statistics server logs the loss meanwhile
        // A lost node takes all its ranks: the others that fell silent with the first are named
        // too (a live rank is heard every heartbeat interval, well within half the timeout).
        say(c.protocol.name() + ": ending the job with exit code " + std::to_string(session::kExitLearnerLost) +
            "; ranks silent for over half the peer timeout: " +
            silent_ranks_text(c.heartbeat, c.transport.size(), o.peer_timeout / 2));
        mpi.peer_lost();
        dist::MpiSession::end_job(session::kExitLearnerLost);
    }
}

// This rank's role, as its method lays out the ranks; returns its exit code.
int run_role(const RoleContext& c, const Method& method, dist::MpiSession& mpi, const dist::WaitPolicy& wait) {
    const int rank = c.transport.rank();
    if (method.family == Family::Decentralized) return run_decentralized_rank(c, method, c.o, mpi, wait);
    if (rank == kPsRank || rank == kStatsRank) fs::create_directories(c.o.output);
    if (rank == kPsRank) return run_ps_role(c);
    if (rank == kStatsRank) return run_stats_role(c);
    if (c.s.layout.role(rank) == dist::RankLayout::Role::Relay) return run_relay_role(c);
    return method.learner(c);
}

// After the role: signals take their default action again (a rank waiting in MPI_Finalize can be
// ended), this rank's part of the trace is written, and the heartbeats still on their way are
// received once every rank is here. The barrier and the drain each within the peer timeout: a
// rank that never comes, or sends fewer heartbeats than it says, is gone (MPI_Finalize would wait
// for it). Then rank 0 merges the trace's parts. Returns the exit code.
int finish_rank(const DistOptions& o, dist::MpiTransport& transport, dist::MpiSession& mpi, dist::Heartbeat& heartbeat,
                dist::Timeline* timeline, const std::string& run_id, int code) {
    const int rank = transport.rank();
    const std::string parts_dir = (fs::path(o.output) / "timeline-parts").string();
    heartbeat.stop();
    for (int sig : {SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
    if (timeline) {
        try {
            nn::write_file_atomically(dist::timeline_part_path(parts_dir, run_id, rank), timeline->events_json());
        } catch (const nn::WriteError& e) {  // the run is done: its trace lacks this rank's part
            std::fprintf(stderr, "rudra dist [rank %d]: warning: %s\n", rank, e.what());
        }
    }
    const auto deadline = dist::until(std::chrono::steady_clock::now() + clock_duration(o.peer_timeout));
    if (!transport.barrier_while(deadline) ||
        !heartbeat.drain(dist::until(std::chrono::steady_clock::now() + clock_duration(o.peer_timeout))))
        mpi.peer_lost();
    if (timeline && rank == kPsRank) {
        try {
            const int parts = dist::merge_timeline_parts(o.timeline, parts_dir, run_id, transport.size());
            say("timeline: " + o.timeline + " (" + std::to_string(parts) + " of " + std::to_string(transport.size()) +
                " ranks; open it in Perfetto or chrome://tracing)");
        } catch (const nn::WriteError& e) {
            std::fprintf(stderr, "rudra dist [rank 0]: error: the trace could not be written: %s (the parts stay in %s)\n",
                         e.what(), parts_dir.c_str());
            if (code == 0) code = session::kExitWriteFailed;
        }
    }
    return code;
}

// Disk full, a quota, permissions: no fault of the input or of a peer. What was written before
// stays whole (a checkpoint is replaced only by a complete one). Every rank stops.
[[noreturn]] void end_on_write_error(const DistOptions& o, int rank, StartupWatch& startup, const nn::WriteError& e) {
    const bool trained = startup.started();
    startup.remove_held_file();
    const std::string ck = checkpoint_path(o.output);
    const std::string kept = !trained         ? "nothing was trained"
                             : fs::exists(ck) ? "the newest checkpoint written, " + ck + ", is whole"
                                              : "no checkpoint had been written yet";
    std::fflush(stdout);
    std::fprintf(stderr, "rudra dist [rank %d]: error: a file could not be written: %s. Every rank stops (exit code %d); %s%s\n",
                 rank, e.what(), session::kExitWriteFailed, kept.c_str(),
                 trained && fs::exists(ck) ? (". Once the cause is fixed, " + resume_hint(o.output)).c_str() : "");
    std::fflush(stderr);
    dist::MpiSession::abort_all(session::kExitWriteFailed);
}

// The same bad input fails on every rank: rank 0 reports it and ends them all; a rank that fails
// alone reports after a moment and ends them all.
[[noreturn]] void end_on_error(int rank, StartupWatch& startup, const std::exception& e) {
    startup.remove_held_file();
    if (rank != kPsRank) sleep(2);
    std::fflush(stdout);
    std::fprintf(stderr, "rudra dist [rank %d]: error: %s\n", rank, e.what());
    std::fflush(stderr);
    dist::MpiSession::abort_all(1);
}

// Heartbeats from set-up on: rank 0 sends them to every rank, the others to rank 0 and end when it
// falls silent; until training starts, rank 0 ends the job when another rank does. A live rank's
// heartbeats can wait behind its large messages: while one of those waits here, the rank is
// silent only past 4 times the timeout.
dist::HeartbeatConfig heartbeats(const DistOptions& o, int rank, int size, bool decentralized, StartupWatch& startup) {
    dist::HeartbeatConfig beats = watch_ps(o, rank, decentralized, startup);
    if (rank == kPsRank) {
        beats = dist::HeartbeatConfig();
        beats.notify = ranks_from(1, size);
    }
    beats.pending_grace_s = 4 * o.peer_timeout;
    return beats;
}

// The set-up and the role of one rank, once MPI is up; returns the exit code.
int run_rank(DistOptions& o, const std::chrono::steady_clock::time_point process_start, StartupWatch& startup,
             dist::MpiSession& mpi, dist::MpiTransport& transport, const dist::WaitPolicy& wait) {
    const int rank = transport.rank();
    kernels::selected_micro_kernel();  // a bad RUDRA_ISA or RUDRA_SGEMM_BLOCKS, before any work
    if (transport.size() < 3)
        throw std::runtime_error("rudra dist needs at least 3 ranks (parameter server, statistics server, a learner); got " +
                                 std::to_string(transport.size()));
    std::optional<DistCheckpoint> resume;
    if (!o.resume.empty()) {
        resume = read_dist_checkpoint(o.resume);
        apply_checkpoint_settings(o, *resume);
    }
    if (const std::string note = o.kernels.resolve_precision(); !note.empty() && rank == kPsRank) say(note);
    const Method& method = method_of(dist::Protocol::kind_named(o.protocol));
    const dist::Topology topology = dist::parse_topology(o.topology);
    check_settings(o, method, topology);
    const bool decentralized = method.family == Family::Decentralized;
    dist::Heartbeat heartbeat(transport, heartbeats(o, rank, transport.size(), decentralized, startup));
    const StartupWatch::HeartbeatsWatched watched =
        rank == kPsRank ? startup.watch(heartbeat, transport.size()) : StartupWatch::HeartbeatsWatched(nullptr);
    if (rank == kPsRank) {
        if (const std::string warning = launcher_warning(); !warning.empty())
            std::fprintf(stderr, "rudra dist: warning: %s\n", warning.c_str());
    }
    std::optional<session::RunFolder> folder;  // this run's before any rank writes to it
    const std::string run_id = claim_output(o, resume, transport, startup, folder);
    const dist::RankLayout layout = make_layout(o, topology, decentralized, transport.size());
    // Under adv and adv*, a rank also beats to the ranks besides rank 0 that it sends to or
    // receives from, since each judges its senders by their heartbeats.
    if (topology != dist::Topology::Base && rank != kPsRank)
        for (int peer : layout.peers(rank)) heartbeat.notify(peer);
    const int lambda = decentralized ? transport.size() - 1 : static_cast<int>(layout.learners().size());
    const dist::Protocol protocol = dist::Protocol::parse(o.protocol, lambda, o.n, o.backup, o.k);
    if (!o.lr_modulation.empty()) dist::parse_lr_modulation(o.lr_modulation);
    const std::vector<int> learner_ranks = decentralized ? decentralized_learner_ranks(transport.size()) : layout.learners();
    const StragglerSpec straggler = parse_straggler(o.straggler, learner_ranks);
    if (!straggler.describe().empty() && rank == kPsRank) say(straggler.describe());
    omp_set_num_threads(o.threads);
    const placement::Binding binding = placement::bind_threads(o.bind, dist::MpiSession::ranks_on_this_node(),
                                                               dist::MpiSession::rank_on_this_node(), o.threads);
    if (!binding.message.empty() && rank == kPsRank) std::printf("rank 0 %s\n", binding.message.c_str());
    Setup s = read_setup(o);
    s.process_start = process_start;
    s.layout = layout;
    std::unique_ptr<dist::Timeline> timeline;
    if (!o.timeline.empty()) {
        const std::string role = decentralized ? (rank == kStatsRank ? "statistics server" : "learner") : layout.role_name(rank);
        timeline = std::make_unique<dist::Timeline>(rank, "rank " + std::to_string(rank) + ": " + role);
        s.timeline = timeline.get();
    }
    s.resume = std::move(resume);
    s.stop_requested = session::stop_requested;
    s.checkpoint_requested = session::take_checkpoint_request;
    s.keep_starting = startup.keep_waiting();
    s.started = [&startup] { startup.training_started(); };
    data::TrainTest sets = load_sets(o, s, rank, wait, startup);
    // The ranks that do not train (the PS, leaf PSs, the statistics server) let the training
    // images go once their nets are set up; the labels stay (they count the epoch).
    s.release_train_images = [&sets] { sets.train.release_pixels(); };
    const int64_t done_epochs = s.start_samples / std::max<int64_t>(1, static_cast<int64_t>(sets.train.size()));
    if (!s.resume && done_epochs >= o.epochs)
        throw std::runtime_error(o.warm_start + " has trained " + std::to_string(done_epochs) +
                                 " epochs already; --epochs is the total and must be larger");
    const RoleContext c{o,       s,        transport, heartbeat, protocol, sets, binding,
                        straggler.of(rank, s.spec.seed), nullptr, &wait, &mpi};
    const int code = run_role(c, method, mpi, wait);
    return finish_rank(o, transport, mpi, heartbeat, timeline.get(), run_id, code);
}

}  // namespace

int run_job(const DistOptions& options, int* argc, char*** argv) {
    // From here on, this process is the rank. Its handlers are in place before any stop signal
    // can reach it: a stop requested while the rank starts (a batch system's signal can come
    // that early) is kept for the PS, which stops with a checkpoint as soon as its loop starts.
    run_under_rank_guard(session::install_stop_signals);
    const auto process_start = std::chrono::steady_clock::now();
    // From before MPI_Init, which waits for every rank of the job: a rank that dies while
    // starting must not leave the others waiting forever.
    StartupWatch startup(launcher_rank(), options.startup_timeout, options.peer_timeout,
                         session::stop_requested);
    dist::MpiSession mpi(argc, argv);
    session::install_stop_signals();  // again: MPI_Init installs its own for SIGUSR1
    DistOptions o = options;
    dist::WaitPolicy wait = dist::WaitPolicy::for_load(dist::MpiSession::ranks_on_this_node(), o.threads,
                                                       static_cast<int>(std::thread::hardware_concurrency()));
    if (o.wait_spin >= 0) wait.spin = o.wait_spin;
    if (o.wait_sleep_us >= 0) wait.sleep_us = o.wait_sleep_us;
    dist::MpiTransport transport(wait);
    startup.mpi_started(transport.rank());
    try {
        const int code = run_rank(o, process_start, startup, mpi, transport, wait);
        mpi.finalize_within(o.peer_timeout, code);
        return code;
    } catch (const nn::WriteError& e) {
        end_on_write_error(o, transport.rank(), startup, e);
    } catch (const std::exception& e) {
        end_on_error(transport.rank(), startup, e);
    }
}

}  // namespace rudra::dist::run
