// Run under `mpiexec -n 2` (test/CMakeLists.txt): MpiSumGroup's sums, and the sum a wait gave up
// on. MPI cannot cancel a collective, so a member that posts late still completes the sum the
// other abandoned; what it sends must never land in the abandoning caller's buffer, which that
// caller may have freed by then (a lost learner's job unwinds before it ends).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <vector>

#include "dist/transport/mpi_transport.h"

namespace {

int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

}  // namespace

TEST_CASE("a sum's result is the members' sum, in FP32 and on the BF16 wire") {
    rudra::dist::MpiSumGroup group(true, rudra::dist::WaitPolicy{});
    REQUIRE(group.members() == 2);
    const float me = static_cast<float>(world_rank() + 1);
    std::vector<float> a{me, 2 * me, 3 * me}, b{0.5f * me, 4 * me};
    group.start(a.data(), a.size());
    group.start(b.data(), b.size(), rudra::dist::Wire::Bf16);
    REQUIRE(group.wait_all());
    CHECK(a == std::vector<float>{3, 6, 9});
    CHECK(b == std::vector<float>{1.5f, 12});
}

TEST_CASE("a sum abandoned by its wait never writes into the caller's buffer") {
    rudra::dist::MpiSumGroup group(true, rudra::dist::WaitPolicy{});
    std::vector<float> values(1000, static_cast<float>(world_rank() + 1));
    if (world_rank() == 0) {
        group.start(values.data(), values.size());
        int tests = 0;
        CHECK_FALSE(group.wait_all([&] { return ++tests < 20; }));  // rank 1 has not posted yet
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);  // rank 1's wait for the sum moved it on here
        for (int i = 0; i < 20; ++i) group.progress();
        CHECK(values == std::vector<float>(1000, 1.0f));
        CHECK_THROWS_AS(group.start(values.data(), 1), std::logic_error);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        group.start(values.data(), values.size());
        CHECK(group.wait_all());
        CHECK(values == std::vector<float>(1000, 3.0f));
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    doctest::Context context(argc, argv);
    const int failed = context.run();
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
