// Solvers against hand-computed updates, learning-rate policies, snapshots (round trip and
// every kind of damage), and a short seeded training run whose loss falls.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstring>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "nn/atomic_file.h"
#include "nn/net.h"
#include "nn/snapshot.h"
#include "nn/solver.h"
#include "test/test_files.h"

using namespace rudra::nn;

namespace {

// Two parameter blobs: "a" (3 floats, lr_mult 1, decay_mult 1) and "b" (2 floats, lr_mult 2, decay_mult 0).
ParamStore two_blobs() {
    ParamEntry a, b;
    a.layer = "a";
    a.shape = Shape{3};
    b.layer = "b";
    b.shape = Shape{2};
    b.lr_mult = 2.0f;
    b.decay_mult = 0.0f;
    return ParamStore({a, b});
}

SolverSpec spec(SolverType t, double lr, double momentum, double decay) {
    SolverSpec s;
    s.type = t;
    s.lr.base_lr = lr;
    s.momentum = momentum;
    s.weight_decay = decay;
    s.delta = 1e-8;
    return s;
}

// A file of this program's scratch folder, removed with the folder when the tests end.
std::string tmp(const std::string& name) {
    static const rudra::test::TempDir folder("solver");
    return folder.str() + "/" + name;
}

std::string read_error(const std::string& path) {
    try {
        read_snapshot(path);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("parameters and gradients live in two flat, aligned arenas") {
    ParamStore p = two_blobs();
    CHECK(p.learnable_count() == 5);
    CHECK(p.entries()[1].offset == 16);  // each blob starts on a 64-byte boundary
    CHECK(reinterpret_cast<uintptr_t>(p.values()) % 64 == 0);
    CHECK(reinterpret_cast<uintptr_t>(p.grads()) % 64 == 0);
    ParamStore q = two_blobs();
    CHECK(p.layout_hash() == q.layout_hash());
}

TEST_CASE("SGD with momentum, weight decay and per-parameter multipliers, step by step") {
    ParamStore p = two_blobs();
    float* w = p.values();
    float* g = p.grads();
    w[0] = 1.0f;
    w[16] = 1.0f;
    Solver s(spec(SolverType::SGD, 0.1, 0.9, 0.01), p);
    g[0] = 0.5f;
    g[16] = 0.5f;
    s.apply(g, 0);
    // a: h = 0.1 * (0.5 + 0.01 * 1) = 0.051; w = 0.949. b: h = 0.2 * 0.5 = 0.1; w = 0.9.
    CHECK(w[0] == doctest::Approx(0.949));
    CHECK(w[16] == doctest::Approx(0.9));
    s.apply(g, 1);
    // a: h = 0.9 * 0.051 + 0.1 * (0.5 + 0.00949) = 0.096849; w = 0.852151.
    CHECK(w[0] == doctest::Approx(0.852151));
    CHECK(w[16] == doctest::Approx(0.9 - (0.9 * 0.1 + 0.1)));
}

TEST_CASE("Nesterov and AdaGrad updates") {
    {
        ParamStore p = two_blobs();
        p.values()[0] = 1.0f;
        Solver s(spec(SolverType::Nesterov, 0.1, 0.9, 0.0), p);
        p.grads()[0] = 1.0f;
        s.apply(p.grads(), 0);  // h = 0.1; w -= 1.9 * 0.1 - 0.9 * 0
        CHECK(p.values()[0] == doctest::Approx(0.81));
        s.apply(p.grads(), 1);  // h = 0.19; w -= 1.9 * 0.19 - 0.9 * 0.1
        CHECK(p.values()[0] == doctest::Approx(0.81 - (0.361 - 0.09)));
    }
    {
        ParamStore p = two_blobs();
        Solver s(spec(SolverType::AdaGrad, 0.1, 0.0, 0.0), p);
        p.grads()[0] = 2.0f;
        s.apply(p.grads(), 0);  // h = 4; w -= 0.1 * 2 / 2
        CHECK(p.values()[0] == doctest::Approx(-0.1));
        s.apply(p.grads(), 1);  // h = 8; w -= 0.1 * 2 / sqrt(8)
        CHECK(p.values()[0] == doctest::Approx(-0.1 - 0.2 / std::sqrt(8.0)));
    }
}

TEST_CASE("learning-rate policies") {
    LrPolicy p;
    p.base_lr = 0.1;
    p.gamma = 0.5;
    p.name = "fixed";
    CHECK(p.rate(1000) == doctest::Approx(0.1));
    p.name = "step";
    p.stepsize = 10;
    CHECK(p.rate(9) == doctest::Approx(0.1));
    CHECK(p.rate(25) == doctest::Approx(0.025));
    p.name = "multistep";
    p.stepvalues = {5, 7};
    CHECK(p.rate(4) == doctest::Approx(0.1));
    CHECK(p.rate(6) == doctest::Approx(0.05));
    CHECK(p.rate(100) == doctest::Approx(0.025));
    p.name = "inv";
    p.gamma = 0.0001;
    p.power = 0.75;
    CHECK(p.rate(10000) == doctest::Approx(0.1 * std::pow(2.0, -0.75)));
    p.name = "poly";
    p.power = 2;
    p.max_iter = 100;
    CHECK(p.rate(50) == doctest::Approx(0.025));
}

TEST_CASE("snapshots: round trip, and truncation, damage, wrong magic and version are refused") {
    Snapshot s;
    s.iteration = 1234;
    s.samples_seen = 78976;
    s.data_seed = 7;
    s.layout_hash = 0xabcdef;
    s.solver_type = 2;
    for (int i = 0; i < 100; ++i) {
        s.params.push_back(i * 0.5f);
        s.history.push_back(-i * 0.25f);
    }
    const std::string path = tmp("snap.rudra");
    write_snapshot(path, s);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    Snapshot r = read_snapshot(path);
    CHECK(r.iteration == 1234);
    CHECK(r.samples_seen == 78976);
    CHECK(r.data_seed == 7);
    CHECK(r.layout_hash == 0xabcdef);
    CHECK(r.solver_type == 2);
    CHECK(r.params == s.params);
    CHECK(r.history == s.history);

    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto write = [&](const std::string& p, const std::string& b) {
        std::ofstream(p, std::ios::binary) << b;
        return p;
    };
    std::string flipped = bytes;
    flipped[200] ^= 1;
    CHECK(read_error(write(tmp("flip"), flipped)).find("checksum mismatch") != std::string::npos);
    CHECK(read_error(write(tmp("cut"), bytes.substr(0, bytes.size() - 40))).find("corrupt snapshot") != std::string::npos);
    std::string magic = bytes;
    magic[0] = 'X';
    CHECK(read_error(write(tmp("magic"), magic)).find("bad magic") != std::string::npos);
    std::string version = bytes;
    version[8] = 9;
    CHECK(read_error(write(tmp("version"), version)).find("version 9") != std::string::npos);
    CHECK(read_error(write(tmp("empty"), "")).find("bad magic") != std::string::npos);
    CHECK(read_error(tmp("missing")).find("cannot open") != std::string::npos);
}

TEST_CASE("snapshots: metadata round trip; version 1 files (no metadata) are still read") {
    Snapshot s;
    s.iteration = 5;
    s.params = {1.0f, 2.0f, 3.0f};
    s.history = {0.5f};
    s.metadata = R"({"format":"rudra dist checkpoint","epoch":3})";
    const std::string path = tmp("meta.rudra");
    write_snapshot(path, s);
    CHECK(read_snapshot(path).metadata == s.metadata);

    // The same snapshot as version 1 wrote it: no metadata field, CRC over the rest.
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string v1 = bytes.substr(0, bytes.size() - 4 - 8 - s.metadata.size());
    v1[8] = 1;
    const uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(v1.data()), v1.size()));
    v1.append(reinterpret_cast<const char*>(&crc), 4);
    std::ofstream(tmp("v1.rudra"), std::ios::binary) << v1;
    const Snapshot r = read_snapshot(tmp("v1.rudra"));
    CHECK(r.metadata.empty());
    CHECK(r.params == s.params);
    CHECK(r.history == s.history);

    // A metadata length beyond the file is refused, not allocated.
    std::string huge = bytes;
    const size_t at = bytes.size() - 4 - 8 - s.metadata.size();
    const uint64_t n = uint64_t(1) << 60;
    std::memcpy(&huge[at], &n, 8);
    const uint32_t crc2 =
        static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(huge.data()), huge.size() - 4));
    std::memcpy(&huge[huge.size() - 4], &crc2, 4);
    std::ofstream(tmp("huge.rudra"), std::ios::binary) << huge;
    CHECK(read_error(tmp("huge.rudra")).find("truncated: metadata") != std::string::npos);
}

TEST_CASE("atomic files: a stale .tmp is removed; a write into a missing folder names it") {
    const std::string path = tmp("atomic.txt");
    std::ofstream(path + ".tmp") << "left by a killed writer";
    CHECK(remove_stale_tmp(path));
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    CHECK_FALSE(remove_stale_tmp(path));
    write_file_atomically(path, "whole");
    std::ifstream in(path);
    std::string text;
    std::getline(in, text);
    CHECK(text == "whole");
    std::string error;
    try {
        write_file_atomically(tmp("no-such-dir") + "/x", "y");
    } catch (const std::runtime_error& e) {
        error = e.what();
    }
    CHECK(error.find("no-such-dir/x.tmp: cannot create") != std::string::npos);
    CHECK_THROWS_AS(write_file_atomically(tmp("no-such-dir") + "/x", "y"), WriteError);
}

TEST_CASE("atomic files: the temporary file is created anew, never through a link planted under its name") {
    const std::string path = tmp("linked.txt"), target = tmp("victim.txt");
    std::ofstream(target) << "not to be touched";
    std::filesystem::remove(path + ".tmp");
    std::filesystem::create_symlink(target, path + ".tmp");
    write_file_atomically(path, "whole");
    std::string text;
    std::getline(std::ifstream(target), text);
    CHECK(text == "not to be touched");
    std::getline(std::ifstream(path), text);
    CHECK(text == "whole");
    CHECK_FALSE(std::filesystem::is_symlink(path));
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    // A stale temporary file of a killed writer is replaced, not appended to.
    std::ofstream(path + ".tmp") << "left by a killed writer, much longer than what comes";
    write_file_atomically(path, "new");
    std::getline(std::ifstream(path), text);
    CHECK(text == "new");
}

TEST_CASE("check_can_write: a missing folder is refused before any work, naming it") {
    CHECK_NOTHROW(check_can_write(tmp("trace.json"), "the trace"));
    std::string error;
    try {
        check_can_write(tmp("none") + "/trace.json", "the --timeline trace");
    } catch (const WriteError& e) {
        error = e.what();
    }
    CHECK(error.find("the --timeline trace cannot be written: the folder " + tmp("none") + " does not exist") !=
          std::string::npos);
}

TEST_CASE("a short seeded training run: the loss falls and the test net shares the weights") {
    // Two classes told apart by which half of an 8x8 image is bright, plus noise.
    const std::string text = R"(
        layer { name: 'd' type: 'Data' top: 'data' top: 'label' data_param { batch_size: 16 } }
        layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
                convolution_param { num_output: 4 kernel_size: 3 pad: 1 weight_filler { type: 'xavier' } } }
        layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
        layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
        layer { name: 'norm' type: 'LRN' bottom: 'pool' top: 'norm' lrn_param { local_size: 3 alpha: 5e-5 norm_region: WITHIN_CHANNEL } }
        layer { name: 'ip' type: 'InnerProduct' bottom: 'norm' top: 'ip'
                inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 0.1 } } }
        layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
    )";
    NetSpec net_spec = parse_net_spec(text, "<train>");
    NetOptions o;
    o.data_chw = {1, 8, 8};
    Net net(net_spec, o);
    o.phase = Phase::Test;
    Net test(net_spec, o, &net.params());
    net.params().fill(42);
    Solver solver(spec(SolverType::SGD, 0.05, 0.9, 1e-4), net.params());
    std::mt19937 rng(1);
    std::normal_distribution<float> noise(0.0f, 0.3f);
    auto make_batch = [&](Net& n) {
        for (int i = 0; i < 16; ++i) {
            const int label = static_cast<int>(rng() % 2);
            n.input_label()->data[i] = static_cast<float>(label);
            for (int p = 0; p < 64; ++p) n.input_data().data[i * 64 + p] = ((p < 32) == (label == 0) ? 1.0f : 0.0f) + noise(rng);
        }
    };
    double first = 0, last = 0;
    for (int it = 0; it < 60; ++it) {
        make_batch(net);
        net.params().zero_grads();
        const float loss = net.forward();
        net.backward();
        solver.apply(net.params().grads(), it);
        if (it == 0) first = loss;
        if (it >= 55) last += loss / 5;
    }
    CAPTURE(first);
    CAPTURE(last);
    CHECK(first > 0.4);  // about log 2 before training
    CHECK(last < 0.25 * first);
    make_batch(test);
    CHECK(test.forward() < 0.1 * first);  // the test net sees the trained weights
}
