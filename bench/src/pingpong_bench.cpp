// What one message costs between two ranks of `rudra dist`, for the simulator's message costs
// (bench/simulate): ranks 0 and 1 send a message of BYTES back and forth ROUNDS times through
// the project's MPI transport with the wait policy `rudra dist` picks for this many ranks on
// this node (on an oversubscribed node: sleeps between tests), while every other rank computes
// like a learner (a fixed loop, testing for the end every ~1 ms). So `mpiexec -n 32` on 2 cores
// gives the cost under the load of a 32-rank run. The same again with 64-byte messages (a pull
// request, an empty reply).
// Prints per size: the one-way time's mean and median in microseconds.
// Usage: mpiexec -n P pingpong_bench [BYTES=334032] [ROUNDS=200]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "dist/transport/mpi_transport.h"
#include "dist/transport/wait_policy.h"

using namespace rudra;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPing = 1, kStop = 2;

// One-way times (us) of `rounds` round trips of `bytes` between ranks 0 and 1.
std::vector<double> ping_pong(dist::Transport& t, size_t bytes, int rounds) {
    std::vector<char> out(bytes, 1), in;
    std::vector<double> one_way;
    for (int i = 0; i < rounds; ++i) {
        if (t.rank() == 0) {
            const auto t0 = Clock::now();
            t.send(1, kPing, out.data(), bytes);
            t.recv(1, kPing, in);
            one_way.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
        } else {
            t.recv(0, kPing, in);
            t.send(0, kPing, out.data(), bytes);
        }
    }
    return one_way;
}

void report(const char* what, size_t bytes, std::vector<double> v) {
    double sum = 0;
    for (double x : v) sum += x;
    std::sort(v.begin(), v.end());
    std::printf("%s: %zu bytes, %zu round trips: one-way mean %.1f us, median %.1f us\n", what, bytes, v.size(),
                sum / static_cast<double>(v.size()), v[v.size() / 2]);
}

// A learner's load: arithmetic in ~1 ms pieces until rank 0 says stop.
void compute_until_stopped() {
    int stop = 0;
    MPI_Request req;
    MPI_Irecv(&stop, 1, MPI_INT, 0, kStop, MPI_COMM_WORLD, &req);
    std::vector<float> a(1 << 16, 1.0f);
    volatile float sink = 0;
    for (int done = 0; !done;) {
        const auto t0 = Clock::now();
        while (Clock::now() - t0 < std::chrono::milliseconds(1))
            for (float& x : a) x = x * 0.999f + 0.001f;
        sink = sink + a[7];
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
}

}  // namespace

int main(int argc, char** argv) {
    dist::MpiSession session(&argc, &argv);
    const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 334032;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    dist::MpiTransport t(dist::WaitPolicy::for_load(dist::MpiSession::ranks_on_this_node(), 1, cores));
    if (t.size() < 2 || bytes == 0 || rounds < 1) {
        if (t.rank() == 0) std::fprintf(stderr, "usage: mpiexec -n P (P >= 2) pingpong_bench [BYTES>0] [ROUNDS>0]\n");
        return 2;
    }
    if (t.rank() >= 2) {
        compute_until_stopped();
    } else {
        ping_pong(t, bytes, 10);  // warm-up: connections, buffers
        const auto large = ping_pong(t, bytes, rounds);
        const auto small = ping_pong(t, 64, rounds);
        if (t.rank() == 0) {
            std::printf("pingpong_bench: %d ranks on %d cores, ranks 2.. computing\n", t.size(), cores);
            report("model", bytes, large);
            report("request", 64, small);
            int stop = 1;
            for (int r = 2; r < t.size(); ++r) MPI_Send(&stop, 1, MPI_INT, r, kStop, MPI_COMM_WORLD);
        }
    }
    // As rudra dist ends: past a last barrier, without MPI_Finalize across nodes (UCX's TCP
    // transport can hang in it there, as it did here between 2 nodes of the emulated cluster).
    MPI_Barrier(MPI_COMM_WORLD);
    session.finalize_within(30, 0);
    return 0;
}
