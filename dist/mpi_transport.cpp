#include "dist/mpi_transport.h"

#include <utility>

#include <mpi.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace rudra::dist {

MpiSession::MpiSession(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        MPI_Finalize();
        throw std::runtime_error("the MPI library does not provide MPI_THREAD_MULTIPLE (got level " +
                                 std::to_string(provided) + ")");
    }
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::abort_all(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
}

namespace {

// {ranks sharing this rank's node, this rank's index among them}
std::pair<int, int> node_size_and_rank() {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int n = 1, r = 0;
    MPI_Comm_size(node, &n);
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return {n, r};
}

}  // namespace

int MpiSession::ranks_on_this_node() { return node_size_and_rank().first; }
int MpiSession::rank_on_this_node() { return node_size_and_rank().second; }

MpiTransport::MpiTransport(WaitPolicy policy) : policy_(policy) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

void MpiTransport::send(int dest, int tag, const void* data, size_t bytes) {
    if (bytes > static_cast<size_t>(INT_MAX)) throw std::runtime_error("message larger than 2 GiB");
    MPI_Request req;
    MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &req);
    policy_.wait([&] {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        return done != 0;
    });
}

void MpiTransport::barrier() {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    policy_.wait([&] {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        return done != 0;
    });
}

Envelope MpiTransport::recv(int source, int tag, std::vector<char>& buf) {
    MPI_Message msg;
    MPI_Status status;
    const int src = source == kAnySource ? MPI_ANY_SOURCE : source;
    const int tg = tag == kAnyTag ? MPI_ANY_TAG : tag;
    policy_.wait([&] {
        int found = 0;
        MPI_Improbe(src, tg, MPI_COMM_WORLD, &found, &msg, &status);
        return found != 0;
    });
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    buf.resize(static_cast<size_t>(count));
    MPI_Request req;
    MPI_Imrecv(buf.data(), count, MPI_BYTE, &msg, &req);
    policy_.wait([&] {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        return done != 0;
    });
    return {status.MPI_SOURCE, status.MPI_TAG, static_cast<size_t>(count)};
}

}  // namespace rudra::dist
