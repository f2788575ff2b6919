#include "dist/transport/mpi_transport.h"

#include <utility>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <climits>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include <poll.h>
#include <unistd.h>

#include "kernels/bf16/bf16.h"

namespace rudra::dist {

namespace {

// The PMI socket the process manager gave this rank (PMI_FD: Hydra's proxy, or Slurm's PMI
// server, which takes PMI-1 commands too), or -1.
int pmi_fd() {
    const char* fd = std::getenv("PMI_FD");
    if (!fd || *fd == '\0') return -1;
    char* end = nullptr;
    const long n = std::strtol(fd, &end, 10);
    return *end == '\0' && n >= 0 && n <= INT_MAX ? static_cast<int>(n) : -1;
}

// Tells the process manager that this rank has finished, as MPI_Finalize does through PMI
// ("cmd=finalize", answered by "cmd=finalize_ack"). Hydra takes a rank whose PMI socket closes
// without it for a dead one: its proxy sends SIGUSR1 to the node's other ranks and reports the
// death to mpiexec, which, under -disable-auto-cleanup, signals every other node's proxy and fails
// (exit status -13, "assert (!closed)") where one has already closed: 6 of 13 runs across 4 nodes
// of the emulated cluster ended that way, their outputs written.
void tell_pmi_finished(int fd) {
    static const char finalize[] = "cmd=finalize\n";
    if (write(fd, finalize, sizeof finalize - 1) != static_cast<ssize_t>(sizeof finalize - 1)) return;
    char reply[256];
    size_t got = 0;
    pollfd p{fd, POLLIN, 0};
    while (got < sizeof reply && poll(&p, 1, 5000) == 1) {
        const ssize_t n = read(fd, reply + got, sizeof reply - got);
        if (n <= 0) return;
        got += static_cast<size_t>(n);
        if (std::find(reply, reply + got, '\n') != reply + got) return;
    }
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
    // Messages go eagerly, whatever their size. UCX's rendezvous reads a large message out of
    // the sender's memory (process_vm_readv on one node), and when the sender has died in the
    // meantime UCX aborts the reader: one dead learner would take the PS with it. Measured on
    // 2 cores, this costs about 17% of the images/s of a 5-rank run (bench/results/faults.md).
    // A user's own UCX_RNDV_THRESH is kept.
    setenv("UCX_RNDV_THRESH", "inf", 0);
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        MPI_Finalize();
        throw std::runtime_error("the MPI library does not provide MPI_THREAD_MULTIPLE (got level " +
                                 std::to_string(provided) + ")");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int world = 1, length = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(library, &length);
    exit_without_finalize_ = ranks_on_this_node() < world &&
                             std::string(library, static_cast<size_t>(length)).find("MPICH") != std::string::npos;
    pmi_fd_ = pmi_fd();
}

MpiSession::~MpiSession() {
    if (finalize_) MPI_Finalize();
}

void MpiSession::finalize_within(double seconds, int code) {
    if (!finalize_) return;
    finalize_ = false;
    if (exit_without_finalize_) {
        std::fflush(stdout);
        std::fflush(stderr);
        if (pmi_fd_ >= 0) tell_pmi_finished(pmi_fd_);
        _exit(code);
    }
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> lock(mu);
        if (cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done; })) return;
        std::fflush(stdout);
        std::fprintf(stderr,
                     "rudra dist: MPI_Finalize did not return within %.0f s (UCX's TCP transport can hang there "
                     "closing its connections to other nodes); every file of the run is written: exiting\n",
                     seconds);
        std::fflush(stderr);
        _exit(code);
    });
    MPI_Finalize();
    {
        std::lock_guard<std::mutex> lock(mu);
        done = true;
    }
    cv.notify_one();
    watchdog.join();
}

void MpiSession::abort_all(int code) {
    // The launcher relays a rank's output from a pipe, and the abort can end its proxies before
    // they have read the rank's last lines (why the job ends): give them a moment to read them.
    std::fflush(stdout);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
}

namespace {

// Throws PeerError naming the call, the peer and MPI's message.
void check(int rc, const char* call, int peer) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw PeerError(peer, std::string(call) + (peer >= 0 ? " with rank " + std::to_string(peer) : std::string()) +
                              " failed: " + std::string(text, static_cast<size_t>(len)));
}

// Tests `req` (an operation with `peer`) under the wait policy until it completes (true) or
// keep_waiting says stop (false; the request stays posted).
bool complete(const WaitPolicy& policy, MPI_Request& req, int peer, const KeepWaiting& keep_waiting) {
    return policy.wait(
        [&] {
            int done = 0;
            check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test", peer);
            return done != 0;
        },
        keep_waiting);
}

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

std::vector<int> MpiSession::node_of_each_rank() {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int rank = 0, size = 1, lowest = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    std::vector<int> nodes(static_cast<size_t>(size), 0);
    MPI_Allgather(&lowest, 1, MPI_INT, nodes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    return nodes;
}

data::SharedBytes MpiSession::map_on_node(const std::function<std::vector<uint8_t>()>& make, NodeShare& share) {
    // The node's communicator first, all ranks together (a blocking collective polls: ranks
    // waiting in it for one that works would take the cores from it).
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    const auto wait = [&](MPI_Request& req, const char* what) {
        if (!complete(share.policy, req, kAnySource, share.keep_waiting))
            throw PeerError(kAnySource, std::string("the node's ranks did not all come to ") + what +
                                            " within the start-up time");
    };
    // Non-blocking collectives, waited for under the policy, for the same reason.
    const auto bcast = [&](void* data, uint64_t count, MPI_Datatype type) {
        constexpr uint64_t kChunk = uint64_t{1} << 30;  // MPI counts are ints
        int unit = 1;
        MPI_Type_size(type, &unit);
        for (uint64_t at = 0; at < count; at += kChunk) {
            MPI_Request req;
            check(MPI_Ibcast(static_cast<char*>(data) + at * static_cast<uint64_t>(unit),
                             static_cast<int>(std::min(kChunk, count - at)), type, 0, node, &req),
                  "MPI_Ibcast", kAnySource);
            wait(req, "share the data set");
        }
    };
    const auto all_of = [&](int ok) {
        int all = 0;
        MPI_Request req;
        check(MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, node, &req), "MPI_Iallreduce", kAnySource);
        wait(req, "map the data set");
        return all != 0;
    };
    std::vector<uint8_t> bytes;
    std::unique_ptr<data::NodeFile> file;
    std::string path;
    if (node_rank == 0) {
        if (!share.dir.empty()) share.stale_removed = data::remove_stale_shared_files(share.dir);
        bytes = make();
        if (!share.dir.empty()) {
            try {
                file = std::make_unique<data::NodeFile>(share.dir, bytes);
                path = file->path();
                if (share.on_file) share.on_file(path);
            } catch (const std::exception& e) {
                share.problem = e.what();
            }
        }
    }
    uint64_t sizes[2] = {bytes.size(), path.size()};
    bcast(sizes, 2, MPI_UINT64_T);
    path.resize(sizes[1]);
    bcast(path.data(), sizes[1], MPI_CHAR);
    data::SharedBytes out;
    if (!path.empty()) {
        try {
            out = data::map_shared_file(path, sizes[0]);
        } catch (const std::exception& e) {
            share.problem = e.what();
        }
    }
    const bool mapped = all_of(out.keep != nullptr);
    // Every rank has mapped the file, or none will use it: its name can go.
    if (file) {
        file->remove();
        if (share.on_file) share.on_file("");
    }
    if (!mapped) {
        bytes.resize(sizes[0]);
        bcast(bytes.data(), sizes[0], MPI_BYTE);
        out = data::hold_bytes(std::move(bytes));
    }
    MPI_Comm_free(&node);
    return out;
}

MpiTransport::MpiTransport(WaitPolicy policy) : policy_(policy) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    receiving_.reset(new std::atomic<int>[static_cast<size_t>(size_)]);
    for (int r = 0; r < size_; ++r) receiving_[r] = 0;
}

bool MpiTransport::send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting& keep_waiting) {
    if (bytes > static_cast<size_t>(INT_MAX)) throw std::runtime_error("message larger than 2 GiB");
    MPI_Request req;
    check(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &req), "MPI_Isend", dest);
    count_sent(tag, bytes);
    // A large message moves in pieces as both ranks test it; a smaller one's sender mostly waits
    // for the receiver to take it, and testing it often only takes the cores from the others.
    return complete(bytes >= policy_.transfer_min_bytes ? policy_.for_transfer() : policy_, req, dest, keep_waiting);
}

bool MpiTransport::pending_from(int source) {
    if (source >= 0 && source < size_ && receiving_[source].load(std::memory_order_relaxed) > 0) return true;
    int found = 0;
    check(MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE), "MPI_Iprobe", source);
    return found != 0;
}

bool MpiTransport::barrier_while(const KeepWaiting& keep_waiting) {
    MPI_Request req;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier", kAnySource);
    return complete(policy_, req, kAnySource, keep_waiting);
}

std::optional<Envelope> MpiTransport::recv_while(int source, int tag, std::vector<char>& buf,
                                                 const KeepWaiting& keep_waiting,
                                                 const std::function<bool(int)>& sender_alive) {
    MPI_Message msg;
    MPI_Status status;
    const int src = source == kAnySource ? MPI_ANY_SOURCE : source;
    const int tg = tag == kAnyTag ? MPI_ANY_TAG : tag;
    const bool found_one = policy_.wait(
        [&] {
            int found = 0;
            check(MPI_Improbe(src, tg, MPI_COMM_WORLD, &found, &msg, &status), "MPI_Improbe", source);
            return found != 0;
        },
        keep_waiting);
    if (!found_one) return std::nullopt;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    buf.resize(static_cast<size_t>(count));
    MPI_Request req;
    check(MPI_Imrecv(buf.data(), count, MPI_BYTE, &msg, &req), "MPI_Imrecv", status.MPI_SOURCE);
    const int from = status.MPI_SOURCE;
    // The message is on its way: it moves only as fast as this rank tests it.
    struct Receiving {
        std::atomic<int>& count;
        explicit Receiving(std::atomic<int>& c) : count(c) { ++count; }
        ~Receiving() { --count; }
    };
    bool complete_one;
    {
        const Receiving receiving(receiving_[from]);
        complete_one = complete(policy_.for_transfer(), req, from, [&] { return !sender_alive || sender_alive(from); });
    }
    if (!complete_one) {
        std::lock_guard<std::mutex> lock(abandoned_mu_);
        abandoned_.push_back(std::move(buf));
        buf = std::vector<char>();
        throw PeerError(from, "a message of " + std::to_string(count) + " bytes from rank " + std::to_string(from) +
                                  " stopped arriving");
    }
    count_received(status.MPI_TAG, static_cast<size_t>(count));
    return Envelope{status.MPI_SOURCE, status.MPI_TAG, static_cast<size_t>(count)};
}

namespace {

// MPI's reduction for Wire::Bf16 sums of MPI_UINT16_T: inout = round(in + inout), in FP32.
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
    const auto* a = static_cast<const kernels::bf16*>(in);
    auto* b = static_cast<kernels::bf16*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = kernels::to_bf16(kernels::from_bf16(a[i]) + kernels::from_bf16(b[i]));
}

}  // namespace

MpiSumGroup::MpiSumGroup(bool member, WaitPolicy policy) : policy_(policy) {
    // A sum advances one round at a time, and each round waits for the slowest member to test
    // again: the point-to-point policy's 2 ms sleeps made the all-reduce wait 4.7 s against 1.0 s
    // of compute with 3 learners on 2 cores; 50 us, 0.4 s (and 1,620 images/s instead of 510).
    policy_.sleep_us = std::min(policy_.sleep_us, 50);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank, &comm_), "MPI_Comm_split", kAnySource);
    if (comm_ != MPI_COMM_NULL) {
        MPI_Comm_size(comm_, &members_);
        MPI_Comm_rank(comm_, &index_);
        check(MPI_Op_create(sum_bf16, 1, &bf16_sum_), "MPI_Op_create", kAnySource);
    }
}

MpiSumGroup::~MpiSumGroup() {
    if (!pending_.empty()) {
        // Sums a lost member left posted: MPI may still write into their copies, its
        // communicator and its operation until the process ends.
        static_cast<void>(new std::vector<Staged>(std::move(staged_)));
        return;
    }
    if (bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiSumGroup::start(float* data, size_t count, Wire wire) {
    if (comm_ == MPI_COMM_NULL) throw std::logic_error("MpiSumGroup: this rank is not a member");
    if (abandoned_) throw std::logic_error("MpiSumGroup: a sum was posted after a wait gave up on a member");
    if (count > static_cast<size_t>(INT_MAX)) throw std::runtime_error("all-reduce bucket larger than 2^31 floats");
    count_sum(count, wire);
    // A vector's buffer stays where MPI was given it when staged_ grows (moved, not copied).
    if (pending_.size() == staged_.size()) staged_.emplace_back();
    Staged& s = staged_[pending_.size()];
    s.into = data;
    MPI_Request req;
    if (wire == Wire::Bf16) {
        s.fp32.clear();
        s.bf16.resize(count);
        kernels::to_bf16(data, s.bf16.data(), count);
        check(MPI_Iallreduce(MPI_IN_PLACE, s.bf16.data(), static_cast<int>(count), MPI_UINT16_T, bf16_sum_, comm_,
                             &req),
              "MPI_Iallreduce", kAnySource);
    } else {
        s.bf16.clear();
        s.fp32.assign(data, data + count);
        check(MPI_Iallreduce(MPI_IN_PLACE, s.fp32.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_, &req),
              "MPI_Iallreduce", kAnySource);
    }
    pending_.push_back(req);
}

void MpiSumGroup::progress() {
    if (pending_.empty() || abandoned_) return;
    int done = 0;
    check(MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall",
          kAnySource);
    if (!done) return;
    for (size_t i = 0; i < pending_.size(); ++i) {
        const Staged& s = staged_[i];
        if (!s.bf16.empty())
            kernels::from_bf16(s.bf16.data(), s.into, s.bf16.size());
        else
            std::copy(s.fp32.begin(), s.fp32.end(), s.into);
    }
    pending_.clear();
}

bool MpiSumGroup::wait_all(const KeepWaiting& keep_waiting) {
    const bool done = policy_.wait(
        [&] {
            progress();
            return pending_.empty();
        },
        keep_waiting);
    // The caller goes on without the sums (its buffers may be freed): what a member lost late
    // still sends must never reach them.
    if (!done) abandoned_ = true;
    return done;
}

}  // namespace rudra::dist
