// What `rudra dist`'s roles share (dist/run/job.cpp runs the PS and starts the roles;
// dist/run/roles.cpp holds the statistics server and the learners): the rank layout, the
// setup read from the options, and small helpers. Internal to dist/run/.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "data/batch_stream.h"
#include "data/dataset.h"
#include "dist/methods/allreduce.h"
#include "session/run_loop.h"
#include "dist/ps/learner.h"
#include "dist/ps/protocol.h"
#include "dist/ps/topology.h"
#include "dist/ps/update_rule.h"
#include "dist/run/checkpoint.h"
#include "dist/run/options.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/transport.h"
#include "dist/transport/wait_policy.h"
#include "nn/snapshot.h"
#include "placement/binding.h"
#include "session/training_session.h"

namespace rudra::dist {
class MpiSession;
}  // namespace rudra::dist

namespace rudra::dist::run {

// Rank 0 the PS (under all-reduce, the first learner), rank 1 the statistics server.
constexpr int kPsRank = 0, kStatsRank = 1, kFirstLearner = 2;

struct Setup {
    session::SessionSpec spec;  // the solver with the command line's overrides, the net, the kernels
    // --warm-start: the snapshot, and the samples it had trained on. A warm-started run goes on
    // from there: the solver's schedule and the epoch count continue, --epochs is the total.
    nn::Snapshot warm;
    int64_t start_samples = 0;
    // --resume: the checkpoint (its settings are already in the options).
    std::optional<DistCheckpoint> resume;
    // True once a signal has asked the run to stop (with a checkpoint).
    std::function<bool()> stop_requested;
    // Frees the training images (not their labels): for the ranks that never train, once set up.
    std::function<void()> release_train_images;
    dist::Timeline* timeline = nullptr;  // --timeline: this rank's spans
    dist::RankLayout layout;  // the PS protocols: who is a learner, a leaf PS, whose parent
    std::chrono::steady_clock::time_point process_start;  // this rank's
    // Start-up waits go on while this says so (the start-up allowance, dist/run/startup_watch.h);
    // `started` is called once training starts.
    dist::KeepWaiting keep_starting;
    std::function<void()> started;
    // The PS: true once each time a signal has asked for a checkpoint.
    std::function<bool()> checkpoint_requested;

    const nn::LayerSpec& train_layer() const { return *spec.net.data_layer(nn::Phase::Train); }  // read_setup checks it
    // Where this run starts: a resumed run's samples and seconds so far, or a warm start's
    // samples (and no seconds).
    int64_t first_samples() const { return resume ? resume->samples() : start_samples; }
    double elapsed_offset_s() const { return resume ? resume->elapsed_s() : 0.0; }
};

// --checkpoint-every: "N" updates (steps), "Ns" seconds, "Nm" minutes, "0" none.
session::CheckpointEvery parse_checkpoint_every(const std::string& text);

// How a learner's compute is slowed (--straggler): `factor` times, each mini-batch with
// `probability`, drawn from `seed`.
struct Straggle {
    double factor = 1.0;
    double probability = 1.0;
    uint64_t seed = 0;
};

// --straggler RANK:FACTOR[:P], or all:FACTOR[:P] for every learner: which learners, and how.
struct StragglerSpec {
    int rank = -1;  // the slowed learner's rank; -1: none, or every learner if `all`
    bool all = false;
    double factor = 1.0, probability = 1.0;
    bool slows(int r) const { return all || (rank >= 0 && r == rank); }
    // The slow-down of rank `r`, its draws seeded from the run's seed.
    Straggle of(int r, uint64_t run_seed) const;
    std::string describe() const;  // the PS's line at start ("" for none)
};
// Checked against the learners' ranks; "" is none.
StragglerSpec parse_straggler(const std::string& text, const std::vector<int>& learner_ranks);

// Every rank, once its role is set up: waits for the others (so that training starts together;
// a PeerError when they do not all come within the start-up allowance), then tells the
// statistics server its start-up time and resident memory.
void training_starts(dist::Transport& t, const Setup& s);

// For the line that names a checkpoint that is not routine (not "epoch" or "periodic"): who
// writes it ("PS", or the method), where the run stood ("update 120"), and whether it stopped
// within an epoch.
struct CheckpointLine {
    std::string who, at;
    bool partial_epoch = false;
};
// Writes OUTDIR/checkpoint.rudra (atomically: a checkpoint is replaced only by a whole one), the
// PS protocols' and the decentralized methods' alike.
void write_checkpoint(const std::string& output, nn::Snapshot snapshot, const session::CheckpointFacts& facts,
                      const CheckpointLine& line);
// Writes OUTDIR/final.rudra, the model at the run's end; returns its path.
std::string write_final_snapshot(const std::string& output, const nn::Snapshot& snapshot);

void say(const std::string& line);  // a line on stdout, flushed
// "go on with: rudra dist --resume OUTDIR": how every stop that leaves a checkpoint ends.
std::string resume_hint(const std::string& output);
// A resumed run whose checkpoint lies on an epoch boundary sends that epoch's weights again
// (RunCommon::replay_epoch).
bool replays_epoch(const Setup& s, int64_t samples_per_epoch);
// The sgemm micro-kernel and its cache blocks ("avx512_16x16 mc 96 kc 384 nc 4096"): with the
// threads, what decides the order of a gradient's sums, so that a replay can say why its bytes differ.
std::string sgemm_identity();
// Everything a role needs from the solver, net and data files.
Setup read_setup(const DistOptions& o);
// The PS's update rule settings for a run of `batch` samples per gradient.
dist::UpdateRuleConfig rule_config(const DistOptions& o, const Setup& s, const dist::Protocol& protocol, int batch);
// metrics.jsonl's first line ("start", or "resume"): the run's settings and data set sizes; the
// statistics server's and a replay's add their own fields.
nlohmann::ordered_json start_line(const char* event, const DistOptions& o, const Setup& s,
                                  const data::TrainTest& sets, int learners);
// The seed of a learner's own sample stream (base's learners are streams 2, 3, ...).
uint64_t sample_stream_seed(uint64_t run_seed, int stream);
std::vector<int> ranks_from(int first, int size);
std::string number_text(double v);  // 1.5, not 1.500000
double easgd_beta(const DistOptions& o, int learners);

// Which mini-batches a Straggle slows: a sequence of draws, the same for the same seed.
class SlowDraws {
public:
    explicit SlowDraws(Straggle s) : s_(s), rng_(s.seed) {}
    bool next() { return s_.factor > 1.0 && (s_.probability >= 1.0 || std::bernoulli_distribution(s_.probability)(rng_)); }
    double factor() const { return s_.factor; }

private:
    Straggle s_;
    std::mt19937_64 rng_;
};

// `compute` slowed as `s` says: after a call that draws a slow-down, a sleep of (factor - 1)
// times its duration.
template <class Compute>
auto slowed(Compute compute, Straggle s) {
    return [compute, draws = SlowDraws(s)](auto&&... args) mutable {
        const auto t0 = std::chrono::steady_clock::now();
        const double loss = compute(std::forward<decltype(args)>(args)...);
        if (draws.next()) std::this_thread::sleep_for((std::chrono::steady_clock::now() - t0) * (draws.factor() - 1.0));
        return loss;
    };
}

// Local SGD steps on `run`'s solver over `prefetch`'s mini-batches, slowed as `straggle` says;
// the solver's iteration count starts at `first_step`.
dist::LocalSgdWork local_sgd_work(session::TrainingSession& run, data::Prefetcher& prefetch, Straggle straggle,
                                  int64_t first_step = 0);

// What a rank's role needs besides its options: the run's setup, its transport and heartbeat, the
// protocol, the data, where its threads run and how much slower it computes (--straggler). The
// MPI parts are null where a test runs the roles on the in-process transport.
struct RoleContext {
    const DistOptions& o;
    const Setup& s;
    dist::Transport& transport;
    dist::Heartbeat& heartbeat;
    const dist::Protocol& protocol;
    const data::TrainTest& sets;
    const placement::Binding& binding;
    Straggle straggle;
    dist::SumGroup* group = nullptr;         // the decentralized methods' learners: their sums
    const dist::WaitPolicy* wait = nullptr;  // for the PS's first line
    dist::MpiSession* mpi = nullptr;         // the PS: ends the job when a learner is lost
};

// The parameter server (rank 0 of the PS protocols); returns the exit code, or ends the job
// when a learner is lost.
int run_ps_role(const RoleContext& c);
// The statistics server (rank 1 of every method).
int run_stats_role(const RoleContext& c);
// A leaf parameter server of --topology adv (dist/ps/relay_server.h).
int run_relay_role(const RoleContext& c);
// The learners of each method (dist/run/methods.h registers them); a decentralized method's first
// learner returns the run's exit code.
int run_ps_learner_role(const RoleContext& c);
int run_easgd_role(const RoleContext& c);
int run_allreduce_role(const RoleContext& c);
int run_gossip_role(const RoleContext& c);

// The session and sample stream of a learner of the parameter-server family. Its dropout and
// sample streams are numbered as the ranks of base's learners (2, 3, ...), so that every topology
// gives its learners the same samples. `auto` kernel backends are measured once for the job: the
// first learner measures (or reads its cache) and sends its choices to the others, whose nets
// have the same shapes. `solver`: the learner takes local steps (EASGD); `minibatches_done`: its
// mini-batches before this run (a resumed one goes on after them).
class PsFamilyLearner {
public:
    PsFamilyLearner(const RoleContext& c, bool solver, int64_t minibatches_done);
    session::TrainingSession run;
    data::Prefetcher prefetch;
};

// The decentralized methods' checkpoint, written by their first learner: `run`'s model (or
// `weights`, gossip's average) and solver history, with the counters a resumed run needs (each
// learner's mini-batches in "applied": `taken`, or `steps` for every learner).
void write_learners_checkpoint(const RoleContext& c, const session::TrainingSession& run, const std::string& reason,
                               int64_t steps, int64_t samples, double elapsed_s, const float* weights = nullptr,
                               const std::vector<int64_t>& taken = {});
// A resumed decentralized run's steps so far (0 when not resumed), its weights restored into
// `run`; said once by the first learner.
int64_t resumed_steps(const RoleContext& c, session::TrainingSession& run,
                      session::TrainingSession::History history = session::TrainingSession::History::Required);
// Rank 0 of a decentralized run hears every rank's heartbeats (the others watch rank 0 alone):
// of the ranks silent longer than `timeout`, the one silent longest (a killed rank fell silent
// first), or -1.
std::function<dist::SilentPeer()> silent_peer(dist::Heartbeat& heartbeat, int size, double timeout);
// "2 (3.4 s), 3 (3.1 s)": the ranks (besides 0) not heard from for over `at_least_s`, or "none".
std::string silent_ranks_text(const dist::Heartbeat& heartbeat, int size, double at_least_s);
// A decentralized run's learners: rank 0 and ranks 2.. (rank 1 is the statistics server).
std::vector<int> decentralized_learner_ranks(int size);

}  // namespace rudra::dist::run
