// Transport over MPI (MPI_THREAD_MULTIPLE): non-blocking operations completed under a WaitPolicy,
// matched probes (MPI_Improbe / MPI_Mrecv) so that threads of one rank never steal each other's
// messages.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <mpi.h>

#include "data/shared_bytes.h"
#include "dist/transport/sum_group.h"
#include "dist/transport/transport.h"
#include "dist/transport/wait_policy.h"

namespace rudra::dist {

// Owns MPI_Init_thread / MPI_Finalize. Throws if MPI_THREAD_MULTIPLE is not provided. Errors
// of MPI calls are returned (and thrown by MpiTransport) instead of aborting the job.
class MpiSession {
public:
    MpiSession(int* argc, char*** argv);
    // MPI_Finalize, unless a rank was lost: MPICH's finalize then waits for it forever.
    ~MpiSession();
    void peer_lost() { finalize_ = false; }
    // The rank's end, once every rank has passed the run's last barrier and received every
    // message sent to it, the run's files all written. On one node, MPI_Finalize, bounded: past
    // `seconds` the rank says so and exits with `code`. Across nodes under MPICH, the rank exits
    // with `code` without MPI_Finalize: there UCX 1.13's TCP transport can deadlock (a rank
    // closing a connection waits for a peer that already sits in PMI's barrier and no longer
    // progresses UCX; docs/vcluster.md), and Hydra takes the exit code of a rank that did not
    // finalize.
    void finalize_within(double seconds, int code);
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
    // Ends every rank (used on errors, so that no rank waits forever), a second after flushing
    // this rank's output.
    [[noreturn]] static void abort_all(int code);
    // Ends every rank of the job and returns `code` from mpiexec: the one way to end a job in
    // which a rank is stopped (SIGSTOP) rather than dead, since mpiexec waits for every process.
    [[noreturn]] static void end_job(int code) { abort_all(code); }
    // How many ranks of this job share this rank's node.
    static int ranks_on_this_node();
    // This rank's index among them (0-based).
    static int rank_on_this_node();
    // Collective: for every rank of the job, a number naming its node (the lowest rank on it).
    static std::vector<int> node_of_each_rank();
    // Collective over the ranks of this node: the first one calls `make` while the others sleep
    // under the policy, and every one returns its bytes. They are one copy for the node: a file in
    // `share.dir` (e.g. /dev/shm) that each rank maps read-only, removed as soon as all have
    // mapped it (before, the first rank removes the files of dead jobs there). Where that fails
    // (no such directory, no room, an empty `dir`), each rank gets a copy of its own by a
    // broadcast, and `share.problem` says why on the ranks that saw the failure.
    struct NodeShare {
        std::string dir;
        WaitPolicy policy;
        KeepWaiting keep_waiting;  // every wait gives up (PeerError) when it says stop
        std::function<void(const std::string&)> on_file;  // the node's file while it has a name ("" after)
        std::string problem;                     // out
        std::vector<std::string> stale_removed;  // out: dead jobs' files removed
    };
    static data::SharedBytes map_on_node(const std::function<std::vector<uint8_t>()>& make, NodeShare& share);

private:
    bool finalize_ = true;
    bool exit_without_finalize_ = false;
    int pmi_fd_ = -1;  // the PMI socket to the process manager (Hydra's proxy), or -1
};

class MpiTransport final : public Transport {
public:
    explicit MpiTransport(WaitPolicy policy);
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    bool send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting& keep_waiting) override;
    std::optional<Envelope> recv_while(int source, int tag, std::vector<char>& buf, const KeepWaiting& keep_waiting,
                                       const std::function<bool(int)>& sender_alive = {}) override;
    bool barrier_while(const KeepWaiting& keep_waiting) override;
    bool pending_from(int source) override;

private:
    WaitPolicy policy_;
    int rank_ = 0, size_ = 1;
    std::mutex abandoned_mu_;
    std::vector<std::vector<char>> abandoned_;  // buffers of receives whose senders stopped
    std::unique_ptr<std::atomic<int>[]> receiving_;  // by rank: its messages being received now
};

// The learners' sums (MPI_Iallreduce on a communicator of the member ranks). Every rank of the
// job constructs one (MPI_Comm_split is collective); `member` says whether it is in the group.
class MpiSumGroup final : public SumGroup {
public:
    MpiSumGroup(bool member, WaitPolicy policy);
    ~MpiSumGroup() override;
    MpiSumGroup(const MpiSumGroup&) = delete;
    MpiSumGroup& operator=(const MpiSumGroup&) = delete;
    int members() const override { return members_; }
    int index() const override { return index_; }
    void start(float* data, size_t count, Wire wire = Wire::Fp32) override;
    void progress() override;
    bool wait_all(const KeepWaiting& keep_waiting = {}) override;

private:
    // A sum in flight runs on the group's copy of the caller's values (FP32, or rounded to BF16),
    // copied back into `into` when every pending sum is done. MPI cannot cancel a collective: when
    // a member is lost, the sums stay posted, and a caller unwinding past its buffers must not
    // leave MPI writing into freed memory. The copies are kept for the next step's sums (its
    // buckets are the same), and leaked by a group destroyed with sums still posted.
    struct Staged {
        float* into = nullptr;
        std::vector<float> fp32;
        std::vector<uint16_t> bf16;
    };
    WaitPolicy policy_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Op bf16_sum_ = MPI_OP_NULL;  // BF16 addition, rounding each partial sum
    int members_ = 0, index_ = -1;
    std::vector<MPI_Request> pending_;
    std::vector<Staged> staged_;  // the first pending_.size() are in flight
    bool abandoned_ = false;      // a wait gave up: the sums posted never complete here
};

}  // namespace rudra::dist
