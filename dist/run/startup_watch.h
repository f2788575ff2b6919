// `rudra dist`'s start-up under a deadline. Until training starts, a rank that dies, hangs or
// never arrives must not leave the others waiting forever: under `mpiexec -disable-auto-cleanup`
// and `srun --kill-on-bad-exit=0` nothing else ends them. The watch runs on a thread of its own
// from before MPI_Init:
//   - every rank: if training has not started within the start-up allowance, the rank ends
//     (rank 0 ends the whole job), saying so; this bounds MPI_Init itself, which waits for
//     every rank of the job;
//   - rank 0, once heartbeats run: a rank silent for the peer timeout is lost, and rank 0 ends
//     the job naming it (the others watch rank 0 through their heartbeats).
// Before it ends a rank, the watch removes the node's data-set file that rank created, if any.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dist/transport/heartbeat.h"
#include "dist/transport/transport.h"

namespace rudra::dist::run {

class StartupWatch {
public:
    using Clock = std::chrono::steady_clock;
    // `rank`: this process's rank as the launcher numbered it (-1: not known yet).
    // stop_requested: true once a stop signal came; if training has not started within
    // kStopGrace_s of it, the rank ends with exit 130 (nothing to checkpoint yet), as a batch
    // system's time limit wants, instead of waiting out the start-up allowance.
    StartupWatch(int rank, double startup_timeout_s, double peer_timeout_s, std::function<bool()> stop_requested = {});
    static constexpr double kStopGrace_s = 60.0;
    ~StartupWatch();  // stops watching
    StartupWatch(const StartupWatch&) = delete;
    StartupWatch& operator=(const StartupWatch&) = delete;

    // MPI is up: from now on an abandoned start-up ends the whole job (MPI_Abort).
    void mpi_started(int rank);
    // Rank 0: every other rank's heartbeats are watched while the returned object lives (declare
    // it after the heartbeat, so that it goes first).
    class HeartbeatsWatched {
    public:
        explicit HeartbeatsWatched(StartupWatch* watch) : watch_(watch) {}
        ~HeartbeatsWatched() {
            if (watch_) watch_->watch_heartbeats(nullptr, 0);
        }
        HeartbeatsWatched(const HeartbeatsWatched&) = delete;
        HeartbeatsWatched& operator=(const HeartbeatsWatched&) = delete;

    private:
        StartupWatch* watch_;
    };
    [[nodiscard]] HeartbeatsWatched watch(const dist::Heartbeat& heartbeat, int ranks) {
        watch_heartbeats(&heartbeat, ranks);
        return HeartbeatsWatched(this);
    }
    // The node's data-set file this rank created ("" once removed).
    void hold_file(const std::string& path);
    // Removes the held file now (a rank that ends for another reason during start-up).
    void remove_held_file();
    // Training has started: the watch ends.
    void training_started();
    bool started();
    // For waits during start-up: false once the allowance is spent.
    dist::KeepWaiting keep_waiting() const;

private:
    void watch_heartbeats(const dist::Heartbeat* heartbeat, int ranks);
    void run();
    [[noreturn]] void give_up(int code, const std::string& why);

    int rank_;
    const Clock::time_point deadline_;
    const double startup_timeout_s_, peer_timeout_s_;
    std::atomic<bool> mpi_up_{false};
    std::mutex mu_;  // guards the fields below
    std::condition_variable cv_;
    bool done_ = false;
    const dist::Heartbeat* heartbeat_ = nullptr;
    int ranks_ = 0;
    std::string held_file_;
    std::function<bool()> stop_requested_;
    std::thread thread_;
};

}  // namespace rudra::dist::run
