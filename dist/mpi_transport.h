// Transport over MPI (MPI_THREAD_MULTIPLE): non-blocking operations completed under a WaitPolicy,
// matched probes (MPI_Improbe / MPI_Mrecv) so that threads of one rank never steal each other's
// messages.
#pragma once
#include "dist/transport.h"
#include "dist/wait_policy.h"

namespace rudra::dist {

// Owns MPI_Init_thread / MPI_Finalize. Throws if MPI_THREAD_MULTIPLE is not provided.
class MpiSession {
public:
    MpiSession(int* argc, char*** argv);
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
    // Ends every rank at once (used on errors, so that no rank waits forever).
    [[noreturn]] static void abort_all(int code);
    // How many ranks of this job share this rank's node.
    static int ranks_on_this_node();
    // This rank's index among them (0-based).
    static int rank_on_this_node();
};

class MpiTransport final : public Transport {
public:
    explicit MpiTransport(WaitPolicy policy);
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    void send(int dest, int tag, const void* data, size_t bytes) override;
    Envelope recv(int source, int tag, std::vector<char>& buf) override;
    void barrier() override;

private:
    WaitPolicy policy_;
    int rank_ = 0, size_ = 1;
};

}  // namespace rudra::dist
