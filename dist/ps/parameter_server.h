// The parameter server role: answers weight requests (deferring hardsync requests until the
// next timestamp), feeds gradients to the UpdateRule, sends the weights to the statistics server
// at every epoch boundary, and after the last epoch stops every learner and waits for their
// last messages, so that all ranks end cleanly.
//
// Faults: a learner silent for longer than the timeout (dead, stopped, cut off) is lost. The
// asynchronous protocols go on without it (n-softsync averaging floor(live / n) gradients);
// hardsync cannot, and ends the run at once with a checkpoint of its last update. The PS never
// waits for a lost learner: the final snapshot and statistics are written as soon as the last
// epoch ends, and shutdown waits only for learners that are still alive.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "dist/ps/receive_ahead.h"
#include "dist/ps/run_common.h"
#include "dist/ps/stats_link.h"
#include "dist/ps/update_rule.h"
#include "dist/ps/weight_broadcast.h"
#include "dist/transport/heartbeat.h"
#include "dist/transport/messages.h"
#include "dist/transport/transport.h"
#include "session/run_loop.h"

namespace rudra::dist {

class Timeline;

struct PsConfig : RunCommon {
    std::vector<int> learner_ranks;  // a learner's index (counts, clocks, checkpoints) is its place here
    // Rudra-adv: the leaf parameter servers that talk to this one, each with the learners below
    // it; they send sums of gradients (kGradientSum). Empty: the learners talk to the PS.
    struct Relay {
        int rank = 0;
        std::vector<int> learner_ranks;
    };
    std::vector<Relay> relays;
    // adv*: the learners the PS sends each new version of the weights to (the broadcast tree's
    // first level; dist/ps/weight_broadcast.h); the learners then never pull. A lost learner ends the
    // run as under hardsync: the learners below it in the tree would get no more weights. The
    // stop goes to every learner directly, so that a lost learner never keeps it from the others.
    std::vector<int> broadcast_children;
    double peer_timeout_s = kDefaultPeerTimeoutS;   // silence after which a learner or the statistics server is lost
    // Periodic checkpoints (0: none), besides those at every epoch boundary and on request.
    session::CheckpointEvery checkpoint_every;
    // A thread of its own receives the next message while the PS handles the last one
    // (dist/ps/receive_ahead.h); off: the PS receives each message itself once it is free. Off by
    // default: no gain was measured on 2 cores, and it changes the PS's timing.
    bool receive_ahead = false;
    // --wire: the format of the gradients the learners push, the leaf PSs' sums (adv, adv*), the
    // weights pulled and broadcast (adv*); the PS keeps FP32 weights and widens each gradient or
    // sum before the update.
    Wire wire = Wire::Fp32;
};

// What the PS asks of the process that runs it.
struct PsHooks {
    Heartbeat* heartbeat = nullptr;  // liveness of the other ranks (required)
    // Writes a checkpoint of the current weights, history and rule state; `reason` is "epoch",
    // "periodic", "signal", "request" or "learner lost".
    std::function<void(const std::string& reason)> checkpoint;
    // The last epoch has ended: write the final snapshot and the staleness statistics.
    std::function<void()> finished;
    // Asked between messages: a stop was requested (SIGTERM, SIGINT); a checkpoint was requested
    // (SIGUSR1; the call consumes the request).
    std::function<bool()> stop_requested;
    std::function<bool()> checkpoint_requested;
    std::function<void(const std::string& line)> log;  // one line for the job's output
};

struct PsResult {
    enum class End { Finished, Stopped, LearnerLost };
    End end = End::Finished;
    int64_t updates = 0, samples = 0, dropped_gradients = 0;
    double elapsed_s = 0.0;
    std::vector<int> lost_ranks;  // learners (and the statistics server) that stopped answering
    bool stats_done = false;      // the statistics server wrote its last line
    std::string why;              // End::Stopped / LearnerLost: what happened
};

// On the run loop (session/run_loop.h), a step of the PS is one update: it serves messages
// (requests, gradients, heartbeats, the statistics server's acknowledgements) until one is made,
// or until the run stops short (a signal, a lost learner); after the loop it serves until every
// learner has left and the statistics server is done.
class ParameterServer : private session::RunMethod {
public:
    ParameterServer(Transport& transport, UpdateRule& rule, nn::ParamStore& params, PsConfig config, PsHooks hooks);
    PsResult run();

private:
    // The run loop's.
    void begin(const session::RunPosition& at) override;
    session::StepDone step(const session::RunPosition& at, bool) override;
    bool epoch_end(const session::RunPosition& at, bool last) override;
    bool save(session::CheckpointWhy why, const session::RunPosition& at) override;
    void end(const session::RunPosition& at, bool stopped) override;

    // Receives and handles messages until `enough()`, or until every learner has left and the
    // statistics server is done (or lost).
    void serve(const std::function<bool()>& enough);
    double elapsed() const;
    void handle_child(const Envelope& e, int child);
    void take_gradient_sum(const Envelope& e, int child);
    const float* payload_fp32(size_t at);
    void handle_stats(const Envelope& e);
    void after_update();
    void check_peers();
    bool hears_no_one() const;
    std::optional<Envelope> receive(double wait_s);
    bool peer_alive(int rank) const;  // heard from within the peer timeout
    void lose_learner(int learner, double silent_s);
    void lose_relay(int child, double silent_s);
    void tell_stats_lost(int rank, double silent_s, bool fatal);
    void stop_run(PsResult::End end, const std::string& why);
    void answer_deferred();
    void reply(int rank, int64_t have_ts);
    void reply_stop(int rank);
    bool send_out(int rank, int tag) { return send_checked(rank, tag, out_); }
    bool send_checked(int rank, int tag, std::vector<char>& bytes);
    void send_epoch_weights(int64_t epoch, bool final, bool replay);
    void maybe_broadcast();
    bool broadcast_waits();
    void checkpoint(const std::string& reason);
    int live_learners() const;

    Transport& t_;
    UpdateRule& rule_;
    nn::ParamStore& params_;
    PsConfig config_;
    PsHooks hooks_;
    std::vector<char> in_, out_;               // message buffers, reused
    std::vector<float> wide_gradient_;          // a BF16 gradient or sum widened (--wire bf16)
    std::vector<char> wire_weights_;            // the weights of wire_weights_ts_ in the wire's format
    int64_t wire_weights_ts_ = -1;
    StatsLink stats_;                          // through send_checked
    PostedBuffers posted_;  // sends to lost peers, given up while still posted

    // The ranks that push and pull here: the learners (base), or the leaf PSs (adv).
    struct Child {
        int rank = 0;
        bool relay = false;
        bool bye = false, lost = false;
        bool deferred = false;  // a request waiting for its timestamp (hardsync, or a leaf PS's pull)
        WeightsRequest request{};
    };
    struct Learner {
        int rank = 0;
        int child = 0;  // the index of the child it talks through (itself under base)
        bool lost = false;
        bool done = false;  // said goodbye (to its leaf PS, which told the root)
    };
    std::vector<Child> children_;
    std::vector<Learner> learners_;
    std::vector<int> learner_of_rank_;  // by rank: the learner's index, or -1
    std::vector<BundledGradient> bundle_;  // reused by take_gradient_sum
    std::unique_ptr<ReceiveAhead> ahead_;        // with receive_ahead, while run() runs
    std::unique_ptr<BroadcastSender> broadcast_;  // adv*
    std::vector<char> broadcast_out_;             // adv*: the next version, packed
    bool broadcast_due_ = false, stop_broadcast_ = false;
    bool stopping_ = false, stats_lost_ = false, deaf_ = false;
    SteadyClock::time_point next_check_{};  // when the peers and the stop request are next checked
    int64_t epoch_ = 0;
    int64_t weight_replies_ = 0, empty_replies_ = 0;  // pulls answered with weights, and with "nothing newer"
    int64_t logged_epoch_ = 0;  // the statistics server has logged every epoch up to this one
    // The reason of a stopping checkpoint that waits for the statistics server to log the last
    // epoch ("" when none waits).
    std::string stop_checkpoint_reason_;
    SteadyClock::time_point started_{};
    PsResult result_;
};

}  // namespace rudra::dist
