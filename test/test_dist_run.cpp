// A `rudra dist` job's roles (dist/run/) on the in-process transport, each rank on a thread of
// one process: the wiring that the mpiexec tests (dist_test.sh, fault_test.sh) check through the
// command line, checked here at the level of the files a run leaves: a stop asked by a signal
// ends the run with a checkpoint of where it stood, and a run resumed from it ends where an
// uninterrupted run ends.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "session/run_loop.h"
#include "dist/run/checkpoint.h"
#include "dist/run/methods.h"
#include "dist/run/roles.h"
#include "dist/transport/inprocess_transport.h"
#include "nn/net_spec.h"
#include "nn/snapshot.h"
#include "session/checkpoint.h"
#include "session/exit_codes.h"
#include "session/single_node_run.h"
#include "test/small_net.h"
#include "test/test_files.h"

using namespace rudra;
using namespace rudra::dist::run;
namespace fs = std::filesystem;

namespace {

// The small net and 48 training images (6 all-reduce steps of 2 learners x 4 per epoch).
Setup small_setup() {
    Setup s;
    s.spec.net = nn::parse_net_spec(test::small_conv_net_scaled(), "small.prototxt");
    s.spec.solver.lr.base_lr = 0.05;
    s.spec.solver.momentum = 0.9;
    s.spec.solver.net = "small.prototxt";
    s.spec.seed = 7;
    s.spec.kernels.conv = "own";
    s.process_start = std::chrono::steady_clock::now();
    return s;
}

DistOptions small_options(const std::string& protocol, const fs::path& output) {
    DistOptions o;
    o.solver = "small_solver.prototxt";
    o.protocol = protocol;
    o.epochs = 3;
    o.output = output.string();
    o.checkpoint_every = "0";
    o.progress = "off";
    return o;
}

struct JobResult {
    std::vector<int> codes;  // each rank's exit code (the statistics server's: 0)
};

// One job of `learners` learners (ranks 0, 2, 3, ...) and the statistics server (rank 1), each
// rank a thread. Rank 0's stop request says yes from its `stop_after`th question on (-1: never).
JobResult run_decentralized_job(const DistOptions& o, const Setup& base, const data::TrainTest& sets, int learners,
                                int stop_after) {
    const int size = learners + 1;
    const dist::Protocol protocol = dist::Protocol::parse(o.protocol, learners, 1);
    dist::InProcessHub hub(size);
    dist::InProcessSumHub sums(learners);
    JobResult result;
    result.codes.assign(static_cast<size_t>(size), -1);
    std::atomic<int> asked{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < size; ++r)
        ranks.emplace_back([&, r] {
            dist::InProcessTransport t(hub, r);
            dist::Heartbeat heartbeat(t, dist::HeartbeatConfig{});
            Setup s = base;
            s.release_train_images = [] {};
            s.stop_requested = [&, r] { return r == kPsRank && stop_after >= 0 && ++asked > stop_after; };
            const placement::Binding binding;
            RoleContext c{o, s, t, heartbeat, protocol, sets, binding, {}};
            if (r == kStatsRank) {
                result.codes[static_cast<size_t>(r)] = run_stats_role(c);
                return;
            }
            dist::InProcessSumGroup group(sums, r == kPsRank ? 0 : r - 1);
            c.group = &group;
            result.codes[static_cast<size_t>(r)] = method_of(protocol.kind()).learner(c);
        });
    for (auto& t : ranks) t.join();
    return result;
}

// The run resumed from the checkpoint in `o.output`, as `rudra dist --resume` sets it up.
JobResult resume_job(DistOptions o, const Setup& base, const data::TrainTest& sets, int learners) {
    Setup s = base;
    o.resume = o.output;
    s.resume = read_dist_checkpoint(o.resume);
    apply_checkpoint_settings(o, *s.resume);
    return run_decentralized_job(o, s, sets, learners, -1);
}

std::vector<nlohmann::json> epoch_lines(const fs::path& dir) {
    std::ifstream in(dir / "metrics.jsonl");
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j.value("event", "") == "epoch") out.push_back(j);
    }
    return out;
}

}  // namespace

TEST_CASE("--checkpoint-every: due after N steps or S seconds since the last checkpoint of any reason; 0 never") {
    CHECK(parse_checkpoint_every("25").steps == 25);
    CHECK(parse_checkpoint_every("90s").seconds == 90.0);
    CHECK(parse_checkpoint_every("2m").seconds == 120.0);
    CHECK_THROWS_WITH_AS(parse_checkpoint_every("5h"), doctest::Contains("--checkpoint-every"), std::runtime_error);
    session::CheckpointCadence by_steps(parse_checkpoint_every("4"));
    by_steps.written(10, 0.0);
    CHECK(!by_steps.due(13, 1e9));
    CHECK(by_steps.due(14, 0.0));
    by_steps.written(14, 5.0);  // an epoch checkpoint restarts the count
    CHECK(!by_steps.due(17, 5.0));
    session::CheckpointCadence by_time(parse_checkpoint_every("30s"));
    by_time.written(0, 100.0);
    CHECK(!by_time.due(1000000, 129.9));
    CHECK(by_time.due(1, 130.0));
    const session::CheckpointCadence never(parse_checkpoint_every("0"));
    CHECK(!never.due(1000000, 1e9));
}

TEST_CASE("methods: each protocol has one registry entry; an option of another method is refused naming its methods") {
    for (const char* name :
         {"hardsync", "softsync", "async", "ksync", "kasync", "easgd", "allreduce", "gossip-pull", "gossip-push"}) {
        const Method& m = method_of(dist::Protocol::kind_named(name));
        CHECK(std::string(dist::Protocol::kind_name(m.kind)) == name);
        CHECK(static_cast<bool>(m.learner));
        CHECK((m.family == Family::Decentralized) == dist::Protocol::is_decentralized(m.kind));
    }
    CHECK(methods().size() == 9);
    DistOptions o;
    o.given = {"--tau"};
    CHECK_NOTHROW(check_method_options(o, dist::Protocol::Kind::GossipPush));
    CHECK_THROWS_WITH_AS(check_method_options(o, dist::Protocol::Kind::HardSync),
                         doctest::Contains("--tau is a setting of --protocol easgd, gossip-pull and gossip-push"),
                         std::runtime_error);
    o.given = {"--beta"};
    CHECK_THROWS_WITH_AS(check_method_options(o, dist::Protocol::Kind::AllReduce),
                         doctest::Contains("--beta is a setting of --protocol easgd"), std::runtime_error);
    CHECK(method_names([](const Method& m) { return m.trees; }) == "hardsync, softsync, async and kasync");
    o.given = {"--backup"};
    CHECK_NOTHROW(check_method_options(o, dist::Protocol::Kind::HardSync));
    CHECK_THROWS_WITH_AS(check_method_options(o, dist::Protocol::Kind::KSync),
                         doctest::Contains("--backup is a setting of --protocol hardsync"), std::runtime_error);
    o.given = {"--max-staleness", "--k"};
    CHECK_NOTHROW(check_method_options(o, dist::Protocol::Kind::KAsync));
}

TEST_CASE("--straggler: one learner or all, slowed FACTOR times on every mini-batch or with probability P") {
    const std::vector<int> learners{2, 3, 4};
    const StragglerSpec one = parse_straggler("3:2.5", learners);
    CHECK(one.slows(3));
    CHECK_FALSE(one.slows(2));
    CHECK(one.describe() == "rank 3 is a straggler: its compute is slowed 2.5 times (it sleeps)");
    CHECK(one.of(2, 7).factor == 1.0);
    CHECK(one.of(3, 7).factor == 2.5);
    const StragglerSpec all = parse_straggler("all:3:0.25", learners);
    CHECK(all.slows(2));
    CHECK(all.slows(4));
    CHECK(all.describe() == "every learner is slowed 3 times (it sleeps) on a mini-batch with probability 0.25");
    CHECK_FALSE(parse_straggler("", learners).slows(2));
    CHECK(parse_straggler("", learners).describe().empty());
    for (const char* bad : {"1:3", "3", "3:0.5", "3:2:0", "3:2:1.5", "all:2:x", "3:2:0.5:1", "all", ":2", "3:inf"})
        CHECK_THROWS_WITH_AS(parse_straggler(bad, learners), doctest::Contains("--straggler must be RANK:FACTOR"),
                             std::runtime_error);
    // The draws: about P of the mini-batches, the same ones for the same seed, different for another rank.
    auto draws = [&](int rank) {
        SlowDraws d(all.of(rank, 7));
        std::vector<bool> v;
        for (int i = 0; i < 4000; ++i) v.push_back(d.next());
        return v;
    };
    const std::vector<bool> a = draws(2);
    const double share = static_cast<double>(std::count(a.begin(), a.end(), true)) / a.size();
    CHECK(share > 0.22);
    CHECK(share < 0.28);
    CHECK(draws(2) == a);
    CHECK(draws(3) != a);
    SlowDraws always(one.of(3, 7)), never(one.of(2, 7));
    for (int i = 0; i < 100; ++i) {
        CHECK(always.next());
        CHECK_FALSE(never.next());
    }
}

TEST_CASE("all-reduce roles: a stop checkpoints where the run stood; the resumed run ends with the uninterrupted run's weights") {
    const test::TempDir tmp("dist-run");
    const data::TrainTest sets = test::small_train_test();
    const Setup setup = small_setup();
    const int learners = 2;

    const DistOptions whole = small_options("allreduce", tmp.path() / "whole");
    fs::create_directories(whole.output);
    const JobResult w = run_decentralized_job(whole, setup, sets, learners, -1);
    CHECK(w.codes == std::vector<int>{0, 0, 0});
    const nn::Snapshot expected = nn::read_snapshot((tmp.path() / "whole" / "final.rudra").string());
    CHECK(expected.iteration == 18);  // 3 epochs of 6 steps
    CHECK(epoch_lines(tmp.path() / "whole").size() == 3);

    const DistOptions part = small_options("allreduce", tmp.path() / "part");
    fs::create_directories(part.output);
    // Rank 0 is asked before each step: the learners stop together after the step asked during.
    const JobResult stopped = run_decentralized_job(part, setup, sets, learners, 8);
    CHECK(stopped.codes[0] == session::kExitStopped);
    CHECK(!fs::exists(tmp.path() / "part" / "final.rudra"));
    const DistCheckpoint ck = read_dist_checkpoint(part.output);
    CHECK(ck.meta.at("reason") == "signal");
    CHECK(ck.meta.at("protocol") == "allreduce");
    CHECK(ck.snapshot.iteration == 9);
    CHECK(ck.samples() == 9 * learners * 4);
    CHECK(ck.epoch() == 1);
    CHECK(ck.learners() == learners);
    CHECK(epoch_lines(tmp.path() / "part").size() == 1);
    // One format for train and dist: `rudra train --resume` refuses it by name, as `rudra dist
    // --resume` refuses a single-node run's.
    session::TrainingSession single(setup.spec, sets, {.train_net = true, .test_net = true, .solver = true});
    session::SingleNodeRunConfig single_config;
    std::vector<std::string> notes;
    CHECK_THROWS_WITH_AS(session::resume_single_node(single, ck.path, 7, single_config, notes),
                         doctest::Contains("a distributed run's checkpoint (allreduce)"), std::runtime_error);
    nn::Snapshot single_snapshot = ck.snapshot;
    single_snapshot.metadata = session::checkpoint_metadata(
        {session::kSingleNode, "end", 1, false, 0.0, {{"learners", 1}}, {{"timestamp", 9}, {"samples", 72}, {"applied", {9}}}, {}});
    const std::string single_path = (tmp.path() / "single.rudra").string();
    nn::write_snapshot(single_path, single_snapshot);
    CHECK_THROWS_WITH_AS(read_dist_checkpoint(single_path), doctest::Contains("a single-node run's checkpoint"),
                         std::runtime_error);
    CHECK(read_any_checkpoint(single_path).timestamp() == 9);

    const JobResult resumed = resume_job(part, setup, sets, learners);
    CHECK(resumed.codes == std::vector<int>{0, 0, 0});
    const nn::Snapshot got = nn::read_snapshot((tmp.path() / "part" / "final.rudra").string());
    CHECK(got.iteration == expected.iteration);
    CHECK(got.samples_seen == expected.samples_seen);
    REQUIRE(got.params.size() == expected.params.size());
    CHECK(got.params == expected.params);  // bit for bit
    CHECK(got.history == expected.history);
    const std::vector<nlohmann::json> epochs = epoch_lines(tmp.path() / "part");
    REQUIRE(epochs.size() == 3);  // each epoch logged once
    for (int e = 0; e < 3; ++e) CHECK(epochs[static_cast<size_t>(e)].value("epoch", -1) == e + 1);
}

TEST_CASE("gossip roles: a stop within an epoch checkpoints the learners' steps; the resumed run completes every epoch once") {
    const test::TempDir tmp("dist-run");
    const data::TrainTest sets = test::small_train_test();
    const Setup setup = small_setup();
    const int learners = 2;
    DistOptions o = small_options("gossip-pull", tmp.path() / "g");
    o.tau = 2;
    fs::create_directories(o.output);
    const JobResult stopped = run_decentralized_job(o, setup, sets, learners, 8);
    CHECK(stopped.codes[0] == session::kExitStopped);
    const DistCheckpoint ck = read_dist_checkpoint(o.output);
    CHECK(ck.meta.at("reason") == "signal");
    CHECK(ck.epoch() == 1);
    CHECK(ck.samples() > 48);
    CHECK(ck.samples() < 96);
    CHECK(!fs::exists(tmp.path() / "g" / "final.rudra"));

    const JobResult resumed = resume_job(o, setup, sets, learners);
    CHECK(resumed.codes == std::vector<int>{0, 0, 0});
    const nn::Snapshot final_snap = nn::read_snapshot((tmp.path() / "g" / "final.rudra").string());
    CHECK(final_snap.samples_seen == 3 * 48);
    const std::vector<nlohmann::json> epochs = epoch_lines(tmp.path() / "g");
    REQUIRE(epochs.size() == 3);
    for (int e = 0; e < 3; ++e) CHECK(epochs[static_cast<size_t>(e)].value("epoch", -1) == e + 1);
}
