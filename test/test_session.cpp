// The output folder of a run (session/run_folder.h) and its metrics log.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "nn/atomic_file.h"
#include "session/metrics_log.h"
#include "session/run_folder.h"
#include "session/training_session.h"
#include "nn/net_spec.h"
#include "test_files.h"

using namespace rudra;
using session::RunFolder;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a fresh run takes an empty folder, and creates it") {
    const test::TempDir dir_folder("folder-fresh");
    const std::string dir = dir_folder.str() + "/a/b";
    {
        const RunFolder f(dir, RunFolder::Start::Fresh, "--resume " + dir);
        CHECK(fs::is_directory(dir));
        CHECK(RunFolder::run_files(dir).empty());
        CHECK(slurp(dir + "/.rudra-lock").find("pid " + std::to_string(getpid())) == 0);
    }
    // Files of other kinds are not a run's: a fresh run takes the folder.
    std::ofstream(dir + "/notes.txt") << "mine";
    CHECK_NOTHROW(RunFolder(dir, RunFolder::Start::Fresh, "--resume " + dir));
}

TEST_CASE("a fresh run refuses another run's files and leaves them byte for byte; --overwrite removes only them") {
    const test::TempDir dir_folder("folder-occupied");
    const std::string dir = dir_folder.str();
    std::ofstream(dir + "/metrics.jsonl") << "{\"event\":\"start\"}\n";
    std::ofstream(dir + "/checkpoint.rudra") << "weights";
    std::ofstream(dir + "/final.rudra") << "final";
    std::ofstream(dir + "/notes.txt") << "mine";
    fs::create_directories(dir + "/gossip-peers");
    const std::string message = error_of([&] { RunFolder(dir, RunFolder::Start::Fresh, "rudra dist --resume " + dir); });
    CHECK(message.find(dir + ": the output folder holds another run's files (checkpoint.rudra, final.rudra, "
                             "gossip-peers, metrics.jsonl)") != std::string::npos);
    CHECK(message.find("rudra dist --resume " + dir) != std::string::npos);
    CHECK(message.find("--overwrite") != std::string::npos);
    CHECK(slurp(dir + "/checkpoint.rudra") == "weights");
    CHECK(slurp(dir + "/metrics.jsonl") == "{\"event\":\"start\"}\n");
    // Going on with the run there keeps its files.
    { const RunFolder resumed(dir, RunFolder::Start::Resume, ""); }
    CHECK(slurp(dir + "/final.rudra") == "final");
    { const RunFolder replaced(dir, RunFolder::Start::Overwrite, ""); }
    CHECK(RunFolder::run_files(dir).empty());
    CHECK(slurp(dir + "/notes.txt") == "mine");
}

TEST_CASE("a second live run on one folder is refused, naming the holder; the lock goes with its holder") {
    const test::TempDir dir_folder("folder-locked");
    const std::string dir = dir_folder.str();
    std::optional<RunFolder> first;
    first.emplace(dir, RunFolder::Start::Fresh, "");
    for (const auto start : {RunFolder::Start::Fresh, RunFolder::Start::Resume, RunFolder::Start::Overwrite}) {
        const std::string message = error_of([&] { RunFolder(dir, start, ""); });
        CHECK(message.find("in use by another live run (pid " + std::to_string(getpid())) != std::string::npos);
    }
    first.reset();
    CHECK_NOTHROW(RunFolder(dir, RunFolder::Start::Fresh, ""));
    // A holder killed with kill -9 holds nothing: the kernel drops its lock.
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t child = fork();
    if (child == 0) {
        try {
            const RunFolder held(dir, RunFolder::Start::Fresh, "");
            (void)!write(ready[1], "y", 1);
            pause();
        } catch (...) {
        }
        _exit(1);
    }
    char byte = 0;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    close(ready[0]);
    close(ready[1]);
    const bool refused = !error_of([&] { RunFolder(dir, RunFolder::Start::Fresh, ""); }).empty();
    CHECK(refused);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    CHECK_NOTHROW(RunFolder(dir, RunFolder::Start::Fresh, ""));
}

TEST_CASE("a folder that cannot be made is a write error naming it") {
    const test::TempDir dir_folder("folder-file");
    const std::string dir = dir_folder.str();
    std::ofstream(dir + "/plain") << "a file where a folder should go";
    CHECK_THROWS_WITH_AS(RunFolder(dir + "/plain/out", RunFolder::Start::Fresh, ""),
                         doctest::Contains((dir + "/plain/out: cannot create the output folder").c_str()),
                         nn::WriteError);
}

TEST_CASE("the metrics log: appends on resume, never follows a link, and a failed write names the file") {
    const test::TempDir dir_folder("metrics");
    const std::string dir = dir_folder.str();
    const std::string path = dir + "/metrics.jsonl";
    {
        session::MetricsLog log(path, false);
        log.write({{"event", "start"}});
    }
    {
        session::MetricsLog log(path, true);
        log.write({{"event", "resume"}});
    }
    CHECK(slurp(path) == "{\"event\":\"start\"}\n{\"event\":\"resume\"}\n");
    std::ofstream(dir + "/victim") << "keep";
    fs::create_symlink(dir + "/victim", dir + "/linked.jsonl");
    CHECK_THROWS_AS(session::MetricsLog(dir + "/linked.jsonl", false), nn::WriteError);
    CHECK(slurp(dir + "/victim") == "keep");
    // A file-size limit stands for a full disk: the write fails (EFBIG) instead of killing us.
    const pid_t child = fork();
    if (child == 0) {
        std::signal(SIGXFSZ, SIG_IGN);
        const rlimit small{64, 64};
        setrlimit(RLIMIT_FSIZE, &small);
        session::MetricsLog log(dir + "/full.jsonl", false);
        try {
            log.write({{"event", std::string(200, 'x')}});
        } catch (const nn::WriteError& e) {
            _exit(std::string(e.what()).find(dir + "/full.jsonl: cannot write a metrics line: File too large") == 0 ? 7
                                                                                                                : 8);
        }
        _exit(9);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("evaluation: top-1, top-5 and an Accuracy layer's top_k, over the real images of a partial last batch") {
    // Scores are the bias alone, class 0 highest: a sample of label L has exactly L classes
    // above it. Labels 0..6 twice over 14 samples, in test batches of 4 (two padding rows of
    // label 0 in the last, which would count as correct).
    const std::string text = R"(
        layer { name: 'd' type: 'Data' top: 'data' top: 'label' data_param { batch_size: 4 } }
        layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'
                inner_product_param { num_output: 7 weight_filler { type: 'constant' value: 0 } } }
        layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
        layer { name: 'top3' type: 'Accuracy' bottom: 'ip' bottom: 'label' top: 'acc3'
                accuracy_param { top_k: 3 } include { phase: TEST } }
    )";
    data::TrainTest sets;
    for (data::Dataset* d : {&sets.train, &sets.test}) {
        d->channels = 1;
        d->height = d->width = 2;
        for (int i = 0; i < 14; ++i) {
            d->labels.push_back(static_cast<uint8_t>(i % 7));
            for (int p = 0; p < 4; ++p) d->pixels.push_back(static_cast<uint8_t>(i + p));
        }
        d->num_classes = 7;
    }
    session::SessionSpec spec;
    spec.net = nn::parse_net_spec(text, "eval.prototxt");
    session::TrainingSession run(spec, sets, {.train_net = false, .test_net = true, .solver = false});
    nn::ParamStore& p = run.params();
    std::fill(p.values(), p.values() + p.size(), 0.0f);
    REQUIRE(p.entries().size() == 2);
    float* bias = p.values() + p.entries()[1].offset;
    for (int c = 0; c < 7; ++c) bias[c] = static_cast<float>(6 - c);
    const session::EvalResult r = run.evaluate();
    CHECK(r.images == 14);
    CHECK(r.accuracy == doctest::Approx(2.0 / 14));
    CHECK(r.top5 == doctest::Approx(10.0 / 14));
    REQUIRE(r.layers.size() == 1);
    CHECK(r.layers[0].name == "acc3");
    CHECK(r.layers[0].top_k == 3);
    CHECK(r.layers[0].accuracy == doctest::Approx(6.0 / 14));
    nlohmann::ordered_json line;
    session::add_accuracies(line, r);
    CHECK(line["test_top5"].get<double>() == doctest::Approx(10.0 / 14));
    CHECK(line["accuracy_layers"]["acc3"].get<double>() == doctest::Approx(6.0 / 14));
}
