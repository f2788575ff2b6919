// What `rudra dist`'s roles share (dist/run/job.cpp runs the PS and starts the roles;
// dist/run/roles.cpp holds the statistics server and the learners): the rank layout, the
// setup read from the options, and small helpers. Internal to dist/run/.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "data/batch_stream.h"
#include "data/dataset.h"
#include "dist/methods/allreduce.h"
#include "dist/ps/checkpoint_cadence.h"
#include "dist/ps/learner.h"
#include "dist/ps/protocol.h"
#include "dist/ps/topology.h"
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
};

// --checkpoint-every: "N" updates (steps), "Ns" seconds, "Nm" minutes, "0" none.
dist::CheckpointEvery parse_checkpoint_every(const std::string& text);

// --straggler RANK:FACTOR, checked against the learners' ranks: {rank, factor}, or {-1, 1} for "".
std::pair<int, double> parse_straggler(const std::string& text, const std::vector<int>& learner_ranks);

// Every rank, once its role is set up: waits for the others (so that training starts together;
// a PeerError when they do not all come within the start-up allowance), then tells the
// statistics server its start-up time and resident memory.
void training_starts(dist::Transport& t, const Setup& s);

// A checkpoint's metadata, for the PS protocols and the decentralized ones alike: its format, why
// and when it was written, where the run stood, the settings that define it, and the protocol's
// counters ("rule": timestamp, samples, each learner's "applied"...).
std::string checkpoint_metadata(const std::string& reason, int64_t epoch, double elapsed_s, const std::string& protocol,
                                const nlohmann::ordered_json& settings, const nlohmann::ordered_json& rule);

std::string utc_now();
void say(const std::string& line);  // a line on stdout, flushed
// "go on with: rudra dist --resume OUTDIR": how every stop that leaves a checkpoint ends.
std::string resume_hint(const std::string& output);
// The seed of a learner's own sample stream (base's learners are streams 2, 3, ...).
uint64_t sample_stream_seed(uint64_t run_seed, int stream);
std::vector<int> ranks_from(int first, int size);
std::string number_text(double v);  // 1.5, not 1.500000
double easgd_beta(const DistOptions& o, int learners);

// `compute` slowed `factor` times: after each call, a sleep of (factor - 1) times its duration.
template <class Compute>
auto slowed(Compute compute, double factor) {
    return [compute, factor](auto&&... args) mutable {
        const auto t0 = std::chrono::steady_clock::now();
        const double loss = compute(std::forward<decltype(args)>(args)...);
        if (factor > 1.0)
            std::this_thread::sleep_for((std::chrono::steady_clock::now() - t0) * (factor - 1.0));
        return loss;
    };
}

// Local SGD steps on `run`'s solver over `prefetch`'s mini-batches, slowed `straggle` times; the
// solver's iteration count starts at `first_step`.
dist::LocalSgdWork local_sgd_work(session::TrainingSession& run, data::Prefetcher& prefetch, double straggle,
                                  int64_t first_step = 0);

// The parameter server (rank 0 of the PS protocols); returns the exit code, or ends the job
// when a learner is lost.
int run_ps_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                const data::TrainTest& sets, const dist::WaitPolicy& wait, dist::MpiSession& mpi,
                dist::Heartbeat& heartbeat);
// The statistics server; the learner of the PS protocols (EASGD's included); the all-reduce and
// gossip learners (the first of which returns the run's exit code).
void run_stats(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
               const data::TrainTest& sets, dist::Heartbeat& heartbeat);
void run_learner_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                      const data::TrainTest& sets, const placement::Binding& binding, dist::Heartbeat& heartbeat,
                      double straggle);
// A leaf parameter server of --topology adv (dist/ps/relay_server.h).
void run_relay_role(const DistOptions& o, const Setup& s, dist::Transport& t, const dist::Protocol& protocol,
                    const data::TrainTest& sets, dist::Heartbeat& heartbeat);
int run_allreduce_role(const DistOptions& o, const Setup& s, dist::Transport& t, dist::SumGroup& group,
                       const data::TrainTest& sets, const placement::Binding& binding, dist::Heartbeat& heartbeat,
                       double straggle);
int run_gossip_role(const DistOptions& o, const Setup& s, dist::Transport& t, dist::SumGroup& group,
                    const dist::Protocol& protocol, const data::TrainTest& sets, const placement::Binding& binding,
                    dist::Heartbeat& heartbeat, double straggle);
// Rank 0 of a decentralized run hears every rank's heartbeats (the others watch rank 0 alone):
// of the ranks silent longer than `timeout`, the one silent longest (a killed rank fell silent
// first), or -1.
std::function<dist::SilentPeer()> silent_peer(dist::Heartbeat& heartbeat, int size, double timeout);
// A decentralized run's learners: rank 0 and ranks 2.. (rank 1 is the statistics server).
std::vector<int> decentralized_learner_ranks(int size);

}  // namespace rudra::dist::run
