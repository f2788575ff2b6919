#include "dist/run/startup_watch.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "dist/transport/mpi_transport.h"
#include "session/exit_codes.h"

namespace rudra::dist::run {
namespace {

// An MPI_Init that cannot complete leaves MPICH's segment for the node's ranks
// (/dev/shm/mpich_shar_tmp*) behind: MPICH removes its name once every rank of the node has
// mapped it, and one never will. A rank that gives up removes the names of those it maps: the
// job is over.
void remove_unfinished_mpi_segments() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        const size_t at = line.find("/dev/shm/mpich_shar_tmp");
        if (at == std::string::npos || line.find("(deleted)") != std::string::npos) continue;
        unlink(line.substr(at).c_str());
    }
}

}  // namespace

StartupWatch::StartupWatch(int rank, double startup_timeout_s, double peer_timeout_s,
                           std::function<bool()> stop_requested)
    : rank_(rank),
      deadline_(Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(startup_timeout_s))),
      startup_timeout_s_(startup_timeout_s),
      peer_timeout_s_(peer_timeout_s),
      stop_requested_(std::move(stop_requested)) {
    thread_ = std::thread([this] { run(); });
}

StartupWatch::~StartupWatch() { training_started(); }

void StartupWatch::mpi_started(int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    rank_ = rank;
    mpi_up_ = true;
}

void StartupWatch::watch_heartbeats(const dist::Heartbeat* heartbeat, int ranks) {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_ = heartbeat;
    ranks_ = ranks;
}

void StartupWatch::hold_file(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    held_file_ = path;
}

void StartupWatch::remove_held_file() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_file_.empty()) unlink(held_file_.c_str());
    held_file_.clear();
}

void StartupWatch::training_started() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
        heartbeat_ = nullptr;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool StartupWatch::started() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
}

dist::KeepWaiting StartupWatch::keep_waiting() const {
    return [deadline = deadline_] { return Clock::now() < deadline; };
}

void StartupWatch::give_up(int code, const std::string& why) {
    std::fflush(stdout);
    std::fprintf(stderr, "rudra dist [rank %d]: error: %s\n", rank_, why.c_str());
    std::fflush(stderr);
    remove_held_file();
    if (mpi_up_) {
        dist::MpiSession::end_job(code);
    }
    remove_unfinished_mpi_segments();
    _exit(code);  // MPI_Init has not returned: MPI_Abort cannot be called yet
}

void StartupWatch::run() {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<Clock::time_point> stop_seen;
    while (!done_) {
        cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return done_; });
        if (done_) return;
        if (!stop_seen && stop_requested_ && stop_requested_()) stop_seen = Clock::now();
        if (stop_seen && Clock::now() - *stop_seen > std::chrono::duration<double>(kStopGrace_s)) {
            lock.unlock();
            give_up(session::kExitStopped, "stopped by a signal during start-up, which did not end within " +
                                      std::to_string(static_cast<int>(kStopGrace_s)) +
                                      " s of it: training had not started, there is nothing to checkpoint");
        }
        // Once MPI is up, rank 0 ends the job and says why; the others wait a little longer for it,
        // so that one rank reports instead of all of them.
        if (Clock::now() >= deadline_ + (mpi_up_ && rank_ != 0 ? std::chrono::seconds(10) : std::chrono::seconds(0))) {
            const std::string where = mpi_up_ ? "set up" : "start MPI (MPI_Init waits for every rank of the job)";
            lock.unlock();
            give_up(session::kExitLearnerLost, "the ranks did not all " + where + " within the start-up allowance of " +
                                          std::to_string(static_cast<int>(startup_timeout_s_)) +
                                          " s (--startup-timeout): a rank died or hangs while starting, or the "
                                          "start-up needs more time");
        }
        if (!heartbeat_) continue;
        for (int r = 1; r < ranks_; ++r) {
            const double silent = heartbeat_->silent_s(r);
            if (silent > peer_timeout_s_) {
                lock.unlock();
                give_up(session::kExitLearnerLost, "rank " + std::to_string(r) + " was lost during start-up (not heard from for " +
                                              std::to_string(static_cast<int>(silent)) +
                                              " s): it died or hangs. Ending the job before training started");
            }
        }
    }
}

}  // namespace rudra::dist::run
