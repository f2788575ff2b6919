// Liveness between ranks, kept by the ranks themselves: once its error handler is replaced,
// MPICH reports neither a dead peer (kill -9) nor a stopped one (SIGSTOP, a swapped-out node);
// a send to it simply never completes. Each rank runs a heartbeat thread that sends an empty
// kHeartbeat message to its peers every `interval_s` and records when it last heard from each
// rank; the roles' own receive loops report every other message through heard(). A rank silent
// for longer than a timeout is taken for lost. The heartbeat runs on its own thread so that a
// long computation (a big mini-batch, a test pass) never looks like silence.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/transport/transport.h"

namespace rudra::dist {

struct HeartbeatConfig {
    std::vector<int> notify;  // ranks this rank sends heartbeats to
    double interval_s = 1.0;
    // Watched from the heartbeat thread: when `watch` (a rank, or -1) has been silent for
    // `timeout_s`, `on_silent(rank, seconds)` runs there once.
    int watch = -1;
    double timeout_s = kDefaultPeerTimeoutS;
    std::function<void(int rank, double silent_s)> on_silent;
    // A rank whose message has begun to arrive here and waits to be received is not silent,
    // up to this many seconds since it was last heard (0: pending messages do not count).
    // Its heartbeats travel behind that message: with a large model (AlexNet's 244 MB) and
    // several learners pushing to one PS on a loaded node, a live learner's heartbeats waited
    // over 15 s behind its gradient, and the PS took it for lost.
    double pending_grace_s = 0.0;
};

class Heartbeat {
public:
    Heartbeat(Transport& transport, HeartbeatConfig config);
    ~Heartbeat();  // stops sending
    Heartbeat(const Heartbeat&) = delete;
    Heartbeat& operator=(const Heartbeat&) = delete;

    // A message from `rank` arrived (any message is a sign of life).
    void heard(int rank);
    // A kHeartbeat message from `rank` was received by the role (counted for drain()).
    void beat_received(int rank);
    // Seconds since `rank` was last heard from (since this object started when never); 0 while
    // a message from it waits to be received, within config.pending_grace_s.
    double silent_s(int rank) const;
    // Whether `rank` was heard within the last timeout_s seconds: what "alive" means to every role.
    bool heard_within(int rank, double timeout_s) const { return silent_s(rank) <= timeout_s; }
    // Heartbeats to `rank` from now on too.
    void notify(int rank);
    // No more heartbeats to `rank` (it said goodbye or was declared lost).
    void stop_notifying(int rank);
    // Stops the thread: no heartbeat is sent after it returns.
    void stop();
    // After stop() on every rank (all alive): receives every heartbeat still on its way here, so
    // that none is left unreceived at MPI_Finalize (over UCX's TCP transport, an unreceived
    // message makes MPI_Finalize wait forever). Each rank tells each other how many it sent.
    // Gives up (false) when `keep_waiting` says stop: a peer that never sends its count, or
    // fewer heartbeats than it claims, is not waited for beyond it.
    bool drain(const KeepWaiting& keep_waiting);

private:
    void run();

    Transport& t_;
    HeartbeatConfig config_;
    std::unique_ptr<std::atomic<int64_t>[]> last_ns_;  // by rank: steady_clock time of the last message
    std::unique_ptr<std::atomic<bool>[]> notify_;      // by rank
    std::unique_ptr<std::atomic<int64_t>[]> sent_, received_;  // heartbeats, by rank
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;  // joined by stop()
};

}  // namespace rudra::dist
