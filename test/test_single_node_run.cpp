// The single-node run (session/single_node_run.h) in-process, on a small net: a stop request
// ends it with a snapshot of where it stood, a run resumed from that snapshot ends with the
// uninterrupted run's snapshot byte for byte, and a snapshot request writes one and goes on.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/net_spec.h"
#include "session/checkpoint.h"
#include "session/single_node_run.h"
#include "test/small_net.h"
#include "test_files.h"

using namespace rudra;
namespace fs = std::filesystem;

namespace {

session::SessionSpec small_spec() {
    session::SessionSpec spec;
    spec.net = nn::parse_net_spec(test::small_conv_net_scaled(), "small.prototxt");
    spec.solver.net = "small.prototxt";
    spec.solver.lr.base_lr = 0.05;
    spec.solver.momentum = 0.9;
    spec.solver.snapshot_prefix = "small";
    spec.kernels.conv = "own";
    spec.seed = 7;
    return spec;
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<nlohmann::json> events(const fs::path& metrics, const std::string& kind) {
    std::ifstream in(metrics);
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j.value("event", "") == kind) out.push_back(j);
    }
    return out;
}

// A run of `max_iter` steps into `dir`: fresh, or resumed from `resume`; stops once `stop_after`
// steps of this run are done (-1: never); asks for a snapshot after step `snapshot_at` (-1: never).
session::SingleNodeRunResult train(const data::TrainTest& sets, const fs::path& dir, int64_t max_iter,
                                   const std::string& resume = "", int stop_after = -1, int snapshot_at = -1) {
    session::TrainingSession run(small_spec(), sets, {.train_net = true, .test_net = true, .solver = true});
    session::SingleNodeRunConfig c;
    c.output = dir.string();
    c.max_iter = max_iter;
    c.data_seed = 7;
    std::vector<std::string> notes;
    if (!resume.empty()) session::resume_single_node(run, resume, 7, c, notes);
    int steps = 0;  // asked once before each step (stop) and once after it (snapshot)
    c.stop_requested = [&] { return stop_after >= 0 && steps >= stop_after; };
    c.snapshot_requested = [&] { return ++steps == snapshot_at; };
    fs::create_directories(dir);
    session::MetricsLog log((dir / "metrics.jsonl").string(), !resume.empty());
    return session::run_single_node(run, sets, c, log, {});
}

}  // namespace

TEST_CASE("single node: a stopped run resumed from its snapshot ends with the uninterrupted run's snapshot, byte for byte") {
    const test::TempDir tmp_folder("single-node-run");
    const fs::path tmp = tmp_folder.str();
    const data::TrainTest sets = test::small_train_test();
    const session::SingleNodeRunResult whole = train(sets, tmp / "whole", 36);
    CHECK(!whole.interrupted);
    CHECK(whole.iterations == 36);
    CHECK(whole.last_snapshot == (tmp / "whole" / "small_iter_36.rudra").string());
    CHECK(events(tmp / "whole" / "metrics.jsonl", "epoch").size() == 3);

    const session::SingleNodeRunResult stopped = train(sets, tmp / "part", 36, "", 15);
    CHECK(stopped.interrupted);
    CHECK(stopped.iterations == 15);
    CHECK(fs::exists(tmp / "part" / "small_iter_15.rudra"));
    CHECK(events(tmp / "part" / "metrics.jsonl", "interrupted").size() == 1);
    const nn::Snapshot s = nn::read_snapshot((tmp / "part" / "small_iter_15.rudra").string());
    CHECK(s.iteration == 15);
    CHECK(s.samples_seen == 15 * 4);

    const session::SingleNodeRunResult resumed =
        train(sets, tmp / "part", 36, (tmp / "part" / "small_iter_15.rudra").string());
    CHECK(!resumed.interrupted);
    CHECK(resumed.iterations == 36);
    CHECK(slurp(tmp / "part" / "small_iter_36.rudra") == slurp(tmp / "whole" / "small_iter_36.rudra"));
    const std::vector<nlohmann::json> epochs = events(tmp / "part" / "metrics.jsonl", "epoch");
    REQUIRE(epochs.size() == 3);  // each epoch once, across the two runs
    for (int e = 0; e < 3; ++e) CHECK(epochs[static_cast<size_t>(e)].value("iteration", -1) == 12 * (e + 1));
    fs::remove_all(tmp);
}

TEST_CASE("single node: a snapshot request writes a snapshot at that step and the run goes on") {
    const test::TempDir tmp_folder("single-node-snapshot");
    const fs::path tmp = tmp_folder.str();
    const session::SingleNodeRunResult r = train(test::small_train_test(), tmp, 20, "", -1, 5);
    CHECK(!r.interrupted);
    CHECK(r.iterations == 20);
    CHECK(fs::exists(tmp / "small_iter_5.rudra"));
    CHECK(fs::exists(tmp / "small_iter_20.rudra"));
    const std::vector<nlohmann::json> snaps = events(tmp / "metrics.jsonl", "snapshot");
    REQUIRE(snaps.size() == 2);
    CHECK(snaps[0].value("iteration", -1) == 5);
    fs::remove_all(tmp);
}

TEST_CASE("single node: snapshots are checkpoints of the one format, and a distributed run's is refused by name") {
    const test::TempDir tmp_folder("single-node-checkpoint");
    const fs::path tmp = tmp_folder.str();
    const data::TrainTest sets = test::small_train_test();
    train(sets, tmp, 36, "", 15);
    const std::string path = (tmp / "small_iter_15.rudra").string();
    const session::Checkpoint ck = session::read_checkpoint(path);
    CHECK(ck.single_node());
    CHECK(ck.meta.value("reason", "") == "signal");
    CHECK(ck.timestamp() == 15);
    CHECK(ck.samples() == 15 * 4);
    CHECK(ck.epoch() == 15 * 4 / 48);
    CHECK(ck.learners() == 1);
    CHECK(ck.applied(0) == 15);
    CHECK(!ck.meta.contains("written_at"));  // the same run writes the same bytes

    // A snapshot without metadata (an older run's) reads as a single-node checkpoint at its iteration.
    nn::Snapshot plain = ck.snapshot;
    plain.metadata.clear();
    nn::write_snapshot((tmp / "plain.rudra").string(), plain);
    const session::Checkpoint old = session::read_checkpoint((tmp / "plain.rudra").string());
    CHECK(old.single_node());
    CHECK(old.timestamp() == 15);
    CHECK(old.samples() == 60);

    // The same weights under an all-reduce run's metadata: `rudra train --resume` refuses it.
    session::CheckpointFacts facts;
    facts.method = "allreduce";
    facts.reason = "epoch";
    facts.epoch = 1;
    facts.settings = {{"protocol", "allreduce"}, {"learners", 2}};
    facts.rule = {{"timestamp", 6}, {"samples", 48}, {"applied", {6, 6}}};
    nn::Snapshot dist = ck.snapshot;
    dist.metadata = session::checkpoint_metadata(facts);
    nn::write_snapshot((tmp / "dist.rudra").string(), dist);
    session::TrainingSession run(small_spec(), sets, {.train_net = true, .test_net = true, .solver = true});
    session::SingleNodeRunConfig c;
    std::vector<std::string> notes;
    try {
        session::resume_single_node(run, (tmp / "dist.rudra").string(), 7, c, notes);
        FAIL("a distributed run's checkpoint was resumed as a single-node run");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("a distributed run's checkpoint (allreduce)") != std::string::npos);
    }
    fs::remove_all(tmp);
}
