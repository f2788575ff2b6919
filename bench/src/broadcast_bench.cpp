// adv*'s weight broadcast two ways, side by side in one run: point-to-point forwarding down a
// tree of fan-out F, as `rudra dist --topology adv*` does it (the root sends each version to its
// F children one after the other; learner k forwards it to learners F(k+1) .. F(k+1)+F-1), and
// MPI's non-blocking broadcast (MPI_Ibcast on a communicator of the root and the learners).
// Rank 0 sends VERSIONS versions of BYTES bytes, each as soon as the previous one has left; every
// other rank computes (a fixed piece of arithmetic per step) on its main thread while a thread
// of its own takes the versions. Both ways test their requests and sleep 100 us between tests.
// Prints per way and round: the learners' compute rate against computing alone (the overlap:
// 1.0 = the broadcast cost the compute nothing), a version's mean and largest latency from the
// root's first send to a learner's receipt, and the versions per second.
// Usage: mpiexec -n P broadcast_bench [BYTES=16777216] [VERSIONS=30] [FANOUT=2] [ROUNDS=2]
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one clock for the node's processes

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// Tests `req` every 100 us until it completes.
void wait_sleeping(MPI_Request& req) {
    for (;;) {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

// A fixed piece of arithmetic on 1 MB (in L2): the learner's "mini-batch".
struct Work {
    std::vector<float> x = std::vector<float>(1 << 18, 1.0f);
    float step() {
        for (int pass = 0; pass < 8; ++pass)
            for (float& v : x) v = v * 0.999f + 0.001f;
        return x[0];
    }
};

struct Header {
    int64_t version;
    double sent_s;
};

struct LearnerResult {
    double steps = 0, seconds = 0, latency_sum = 0, latency_max = 0;
};

// Computes on this thread until `done`; returns steps and seconds.
std::pair<double, double> compute_until(const std::atomic<bool>& done, Work& work, volatile float& sink) {
    const double t0 = now_s();
    double steps = 0;
    while (!done.load(std::memory_order_relaxed)) {
        sink = work.step();
        ++steps;
    }
    return {steps, now_s() - t0};
}

void send_sequentially(std::vector<char>& buf, const std::vector<int>& children, int tag) {
    for (int child : children) {
        MPI_Request req;
        MPI_Isend(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, child, tag, MPI_COMM_WORLD, &req);
        wait_sleeping(req);
    }
}

// One way, once: rank 0 broadcasts; the others compute meanwhile. Returns (on rank 0) every
// learner's result, gathered.
std::vector<LearnerResult> run_way(bool collective, size_t bytes, int versions, int fan_out, Work& work) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int learners = size - 1;
    // Tree of learner indices k = rank - 1; the root's children are k = 0 .. F-1.
    std::vector<int> children;
    const int first = rank == 0 ? 0 : fan_out * rank;  // F(k+1) with k = rank - 1
    for (int k = first; k < std::min(first + fan_out, learners); ++k) children.push_back(k + 1);
    const int parent = rank == 0 ? -1 : (rank - 1 < fan_out ? 0 : (rank - 1) / fan_out);
    std::vector<char> buf(std::max(bytes, sizeof(Header)));
    constexpr int kTag = 7;
    LearnerResult mine;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int v = 0; v < versions; ++v) {
            const Header h{v, now_s()};
            std::memcpy(buf.data(), &h, sizeof h);
            if (collective) {
                MPI_Request req;
                MPI_Ibcast(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
                wait_sleeping(req);
            } else {
                send_sequentially(buf, children, kTag);
            }
        }
    } else {
        std::atomic<bool> done{false};
        std::thread receiver([&] {
            for (int v = 0; v < versions; ++v) {
                MPI_Request req;
                if (collective) MPI_Ibcast(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
                else MPI_Irecv(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, parent, kTag, MPI_COMM_WORLD, &req);
                wait_sleeping(req);
                Header h;
                std::memcpy(&h, buf.data(), sizeof h);
                const double latency = now_s() - h.sent_s;
                mine.latency_sum += latency;
                mine.latency_max = std::max(mine.latency_max, latency);
                if (!collective) send_sequentially(buf, children, kTag);
            }
            done = true;
        });
        volatile float sink = 0;
        std::tie(mine.steps, mine.seconds) = compute_until(done, work, sink);
        receiver.join();
    }
    std::vector<LearnerResult> all(static_cast<size_t>(size));
    MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    all.erase(all.begin());  // rank 0's
    return all;
}

// Every learner computes alone (no broadcast) for `seconds`: its steps per second.
std::vector<double> compute_alone(double seconds, Work& work) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    double rate = 0;
    if (rank != 0) {
        std::atomic<bool> done{false};
        std::thread timer([&] {
            std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
            done = true;
        });
        volatile float sink = 0;
        const auto [steps, took] = compute_until(done, work, sink);
        timer.join();
        rate = steps / took;
    }
    std::vector<double> rates(static_cast<size_t>(size));
    MPI_Gather(&rate, 1, MPI_DOUBLE, rates.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    rates.erase(rates.begin());
    return rates;
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t{16} << 20);
    const int versions = argc > 2 ? std::atoi(argv[2]) : 30;
    const int fan_out = argc > 3 ? std::atoi(argv[3]) : 2;
    const int rounds = argc > 4 ? std::atoi(argv[4]) : 2;
    if (provided < MPI_THREAD_MULTIPLE || size < 2 || versions < 1 || fan_out < 1 || bytes > (size_t{1} << 30)) {
        if (rank == 0)
            std::fprintf(stderr, "broadcast_bench: needs MPI_THREAD_MULTIPLE, 2 ranks or more, VERSIONS >= 1, "
                                 "FANOUT >= 1 and BYTES <= 1 GiB\n");
        MPI_Finalize();
        return 2;
    }
    Work work;
    if (rank == 0)
        std::printf("broadcast_bench: %d learners, %zu bytes x %d versions, fan-out %d (point to point)\n", size - 1,
                    bytes, versions, fan_out);
    for (int round = 0; round < rounds; ++round) {
        const std::vector<double> alone = compute_alone(1.0, work);
        for (bool collective : {false, true}) {
            const double t0 = now_s();
            const std::vector<LearnerResult> r = run_way(collective, bytes, versions, fan_out, work);
            const double wall = now_s() - t0;
            if (rank != 0) continue;
            double overlap = 0, latency = 0, latency_max = 0;
            for (size_t i = 0; i < r.size(); ++i) {
                overlap += r[i].steps / r[i].seconds / alone[i];
                latency += r[i].latency_sum / versions;
                latency_max = std::max(latency_max, r[i].latency_max);
            }
            std::printf("round %d  %-22s overlap %.3f  latency mean %7.1f ms  max %7.1f ms  %6.2f versions/s\n", round,
                        collective ? "MPI_Ibcast" : "point-to-point tree", overlap / static_cast<double>(r.size()),
                        1e3 * latency / static_cast<double>(r.size()), 1e3 * latency_max, versions / wall);
            std::fflush(stdout);
        }
    }
    MPI_Finalize();
    return 0;
}
