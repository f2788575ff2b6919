// Data readers on generated files (good, truncated, corrupt), the mean, the transform and the
// seeded prefetching stream.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <set>
#include <thread>

#include "base/mix64.h"
#include "data/batch_stream.h"
#include "data/dataset.h"
#include "data/shared_bytes.h"
#include "data/transform.h"
#include "test_files.h"

using namespace rudra::data;
using rudra::mix64;
using namespace rudra::test;

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("IDX: plain and gzip files read the same") {
    const TempDir dir_folder("idx");
    const std::string dir = dir_folder.str();
    write_bytes(dir + "/i", idx_images(7, 4, 5));
    write_bytes(dir + "/l", idx_labels(7));
    write_bytes(dir + "/i.gz", idx_images(7, 4, 5), true);
    write_bytes(dir + "/l.gz", idx_labels(7), true);
    Dataset a = read_idx(dir + "/i", dir + "/l"), b = read_idx(dir + "/i.gz", dir + "/l.gz");
    CHECK(a.size() == 7);
    CHECK(a.channels == 1);
    CHECK(a.height == 4);
    CHECK(a.width == 5);
    CHECK(a.sample(3)[2] == 5);
    CHECK(a.labels[6] == 6);
    CHECK(a.num_classes == 7);
    CHECK(a.pixels == b.pixels);
    CHECK(a.labels == b.labels);
}

TEST_CASE("IDX: truncated, empty and malformed files name the file and the problem") {
    const TempDir dir_folder("idxbad");
    const std::string dir = dir_folder.str();
    write_bytes(dir + "/l", idx_labels(7));
    auto images = idx_images(7, 4, 5);
    auto cut = images;
    cut.resize(cut.size() - 3);
    write_bytes(dir + "/cut", cut);
    CHECK(error_of([&] { read_idx(dir + "/cut", dir + "/l"); }) ==
          dir + "/cut: truncated: header promises 140 data bytes, file has 137");
    write_bytes(dir + "/empty", {});
    CHECK(error_of([&] { read_idx(dir + "/empty", dir + "/l"); }) == dir + "/empty: empty file");
    auto magic = images;
    magic[2] = 0x0D;  // float elements
    write_bytes(dir + "/magic", magic);
    CHECK(error_of([&] { read_idx(dir + "/magic", dir + "/l"); }).find("element type 13") != std::string::npos);
    write_bytes(dir + "/rank", idx_labels(7));
    CHECK(error_of([&] { read_idx(dir + "/rank", dir + "/l"); }).find("rank 1, expected 3") != std::string::npos);
    write_bytes(dir + "/more", idx_images(8, 4, 5));
    CHECK(error_of([&] { read_idx(dir + "/more", dir + "/l"); }).find("has 8 images but") != std::string::npos);
    auto extra = images;
    extra.push_back(1);
    write_bytes(dir + "/extra", extra);
    CHECK(error_of([&] { read_idx(dir + "/extra", dir + "/l"); }).find("1 unexpected bytes") != std::string::npos);
    CHECK(error_of([&] { read_idx(dir + "/none", dir + "/l"); }) == dir + "/none: no such file");
    // A gzip stream cut short, and one with damaged bytes.
    write_bytes(dir + "/i.gz", images, true);
    std::ifstream in(dir + "/i.gz", std::ios::binary);
    std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto gz_cut = gz;
    gz_cut.resize(gz.size() / 2);
    write_bytes(dir + "/cut.gz", gz_cut);
    CHECK(error_of([&] { read_idx(dir + "/cut.gz", dir + "/l"); }).find(dir + "/cut.gz") == 0);
    auto gz_bad = gz;
    for (size_t i = 12; i < gz_bad.size() - 8; ++i) gz_bad[i] ^= 0x5A;
    write_bytes(dir + "/bad.gz", gz_bad);
    CHECK(error_of([&] { read_idx(dir + "/bad.gz", dir + "/l"); }).find(dir + "/bad.gz") == 0);
}

TEST_CASE("CIFAR-10 binary: records, truncation, bad labels, directory detection") {
    const TempDir dir_folder("cifar");
    const std::string dir = dir_folder.str();
    write_bytes(dir + "/data_batch_1.bin", cifar_records(5));
    write_bytes(dir + "/data_batch_2.bin", cifar_records(3));
    write_bytes(dir + "/test_batch.bin", cifar_records(4));
    TrainTest tt = load_train_test(dir);
    CHECK(tt.format == "cifar10");
    CHECK(tt.train.size() == 8);
    CHECK(tt.test.size() == 4);
    CHECK(tt.train.channels == 3);
    CHECK(tt.train.labels[6] == 1);          // second file, record 1
    CHECK(tt.train.sample(6)[1024] == 1025 % 256);  // green plane starts at 1024
    auto cut = cifar_records(2);
    cut.pop_back();
    write_bytes(dir + "/cut.bin", cut);
    CHECK(error_of([&] { read_cifar10({dir + "/cut.bin"}); }).find("not a whole number of 3073-byte") != std::string::npos);
    auto bad = cifar_records(2);
    bad[3073] = 12;
    write_bytes(dir + "/bad.bin", bad);
    CHECK(error_of([&] { read_cifar10({dir + "/bad.bin"}); }).find("record 1 has label 12") != std::string::npos);
    write_bytes(dir + "/empty.bin", {});
    CHECK(error_of([&] { read_cifar10({dir + "/empty.bin"}); }) == dir + "/empty.bin: empty file");
    CHECK(error_of([&] { load_train_test(dir + "/nowhere"); }).find("does not exist") != std::string::npos);
    const TempDir empty_dir_folder("nodata");
    const std::string empty_dir = empty_dir_folder.str();
    CHECK(error_of([&] { load_train_test(empty_dir); }).find("no data set found") != std::string::npos);
}

TEST_CASE("mean and transform: per-pixel mean, scale, centre crop, mirror") {
    Dataset d;
    d.channels = 1;
    d.height = 2;
    d.width = 3;
    d.pixels = {0, 10, 20, 30, 40, 50, /**/ 2, 12, 22, 32, 42, 52};
    d.labels = {0, 1};
    auto mean = pixel_mean(d);
    CHECK(mean[0] == doctest::Approx(1.0));
    CHECK(mean[5] == doctest::Approx(51.0));
    Transform t;
    t.mean = mean;
    t.scale = 0.5f;
    std::vector<float> out(6);
    transform_sample(d, 1, t, false, 0, out.data());
    for (float v : out) CHECK(v == doctest::Approx(0.5));
    Transform c;
    c.crop = 2;
    c.mirror = true;
    transform_sample(d, 0, c, false, 0, out.data());  // test: centre crop, no mirror
    CHECK(out[0] == 0.0f);
    CHECK(out[1] == 10.0f);
    std::set<float> firsts;
    for (uint64_t key = 0; key < 64; ++key) {  // train: crops and flips vary with the key
        transform_sample(d, 0, c, true, key, out.data());
        firsts.insert(out[0]);
    }
    CHECK(firsts.size() >= 3);
}

TEST_CASE("transform: every crop, mirror and mean form agrees with a pixel-by-pixel reference") {
    Dataset d;
    d.channels = 3;
    d.height = 9;
    d.width = 11;
    const int64_t per = d.sample_bytes();
    std::mt19937 rng(5);
    for (int64_t i = 0; i < 2 * per; ++i) d.pixels.push_back(static_cast<uint8_t>(rng() % 256));
    d.labels = {0, 1};
    std::vector<float> per_pixel(per);
    for (float& m : per_pixel) m = static_cast<float>(rng() % 2000) / 10.0f;
    const std::vector<std::vector<float>> means = {{}, {17.5f}, {104.0f, 117.0f, 123.0f}, per_pixel};
    for (const auto& mean : means)
        for (int crop : {0, 5, 9})
            for (bool mirror : {false, true})
                for (bool train : {false, true})
                    for (uint64_t key = 0; key < 8; ++key) {
                        Transform t;
                        t.mean = mean;
                        t.crop = crop;
                        t.mirror = mirror;
                        t.scale = 0.25f;
                        const int oh = t.out_h(d), ow = t.out_w(d);
                        std::vector<float> out(static_cast<size_t>(d.channels) * oh * ow);
                        transform_sample(d, 1, t, train, key, out.data());
                        // Where the sample's first output pixel came from: the window's corner and
                        // whether it is mirrored, read back from the output of a known mean.
                        int y0 = (d.height - oh) / 2, x0 = (d.width - ow) / 2;
                        bool flip = false;
                        if (train && (crop || mirror)) {
                            const uint64_t r = mix64(key);
                            if (crop) {
                                y0 = static_cast<int>(r % (d.height - oh + 1));
                                x0 = static_cast<int>((r >> 20) % (d.width - ow + 1));
                            }
                            flip = mirror && ((r >> 40) & 1);
                        }
                        int wrong = 0;
                        for (int c = 0; c < d.channels; ++c)
                            for (int y = 0; y < oh; ++y)
                                for (int x = 0; x < ow; ++x) {
                                    const int sx = flip ? x0 + ow - 1 - x : x0 + x;
                                    const int64_t si = c * d.height * d.width + (y0 + y) * d.width + sx;
                                    const float m = mean.empty()          ? 0.0f
                                                    : mean.size() == 1   ? mean[0]
                                                    : mean.size() == 3   ? mean[c]
                                                                         : mean[si];
                                    const float want = (d.sample(1)[si] - m) * 0.25f;
                                    wrong += out[(static_cast<int64_t>(c) * oh + y) * ow + x] != want;
                                }
                        CHECK_MESSAGE(wrong == 0, "mean of " << mean.size() << ", crop " << crop << ", mirror "
                                                             << mirror << ", train " << train << ", key " << key);
                    }
}

TEST_CASE("shuffled stream: each epoch is a permutation, seeded and different per epoch") {
    ShuffledOrder a(50, 9), b(50, 9), c(50, 10);
    std::vector<int64_t> e0, e1, other;
    for (uint64_t p = 0; p < 50; ++p) e0.push_back(a.at(p));
    for (uint64_t p = 50; p < 100; ++p) e1.push_back(a.at(p));
    for (uint64_t p = 0; p < 50; ++p) other.push_back(c.at(p));
    auto sorted = e0;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 50; ++i) CHECK(sorted[i] == i);
    CHECK(e0 != e1);
    CHECK(e0 != other);
    CHECK(b.at(73) == e1[23]);  // random access agrees with sequential use
}

TEST_CASE("prefetcher: batches follow the stream and resume at a position") {
    Dataset d;
    d.channels = 1;
    d.height = d.width = 2;
    for (int i = 0; i < 10; ++i) {
        for (int p = 0; p < 4; ++p) d.pixels.push_back(static_cast<uint8_t>(i));
        d.labels.push_back(static_cast<uint8_t>(i));
    }
    Transform t;
    ShuffledOrder order(10, 5);
    std::vector<float> seen;
    {
        Prefetcher pf(d, t, 4, 5, 0);
        for (int b = 0; b < 6; ++b) {
            const Batch& batch = pf.next();
            CHECK(batch.first_position == static_cast<uint64_t>(4 * b));
            for (int i = 0; i < 4; ++i) {
                CHECK(batch.labels[i] == static_cast<float>(order.at(4 * b + i)));
                CHECK(batch.data[i * 4 + 3] == batch.labels[i]);
                seen.push_back(batch.labels[i]);
            }
        }
    }
    Prefetcher resumed(d, t, 4, 5, 12);
    const Batch& b3 = resumed.next();
    for (int i = 0; i < 4; ++i) CHECK(b3.labels[i] == seen[12 + i]);
}

TEST_CASE("prefetcher: the start hook runs once, on the I/O thread (where binding sets its CPUs)") {
    Dataset d;
    d.channels = d.height = d.width = 1;
    for (int i = 0; i < 8; ++i) {
        d.pixels.push_back(static_cast<uint8_t>(i));
        d.labels.push_back(static_cast<uint8_t>(i % 3));
    }
    std::atomic<int> calls{0};
    std::thread::id hook_thread;
    {
        Prefetcher pf(d, Transform{}, 2, 1, 0, [&] {
            hook_thread = std::this_thread::get_id();
            calls.fetch_add(1);
        });
        for (int b = 0; b < 5; ++b) pf.next();  // the hook ran before the first batch was filled
        CHECK(calls.load() == 1);
    }
    CHECK(hook_thread != std::thread::id());
    CHECK(hook_thread != std::this_thread::get_id());
}

namespace {

// Five training images of 1x2x3 and two test images.
TrainTest small_train_test() {
    TrainTest t;
    t.format = "idx";
    t.train.source = "train-images";
    t.train.label_source = "train-labels";
    t.train.channels = 1;
    t.train.height = 2;
    t.train.width = 3;
    t.train.num_classes = 4;
    for (int i = 0; i < 5; ++i) {
        t.train.labels.push_back(static_cast<uint8_t>(i % 4));
        for (int p = 0; p < 6; ++p) t.train.pixels.push_back(static_cast<uint8_t>(i * 10 + p));
    }
    t.test = t.train;
    t.test.source = "test-images";
    t.test.truncate(2);
    return t;
}

}  // namespace

TEST_CASE("a packed data set unpacks to the same one; damaged bytes are a clear error") {
    const TrainTest t = small_train_test();
    const std::vector<uint8_t> bytes = pack_train_test(t);
    const TrainTest u = unpack_train_test(bytes);
    CHECK(u.format == "idx");
    for (auto [a, b] : {std::pair{&t.train, &u.train}, std::pair{&t.test, &u.test}}) {
        CHECK(b->source == a->source);
        CHECK(b->label_source == a->label_source);
        CHECK(b->channels == a->channels);
        CHECK(b->height == a->height);
        CHECK(b->width == a->width);
        CHECK(b->num_classes == a->num_classes);
        CHECK(b->pixels == a->pixels);
        CHECK(b->labels == a->labels);
    }
    CHECK(u.test.size() == 2);
    std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 3);
    CHECK_THROWS_WITH_AS(unpack_train_test(cut), doctest::Contains("truncated"), DataError);
    std::vector<uint8_t> longer = bytes;
    longer.push_back(0);
    CHECK_THROWS_WITH_AS(unpack_train_test(longer), doctest::Contains("bytes after its end"), DataError);
    std::vector<uint8_t> other = bytes;
    other[0] ^= 1;
    CHECK_THROWS_WITH_AS(unpack_train_test(other), doctest::Contains("bad magic"), DataError);
}

TEST_CASE("a node's one copy: written to a memory file, mapped read-only, the training pixels viewed in place") {
    const TrainTest t = small_train_test();
    const std::vector<uint8_t> bytes = pack_train_test(t);
    char dir_template[] = "/tmp/rudra-test-shared-XXXXXX";
    const std::string dir = mkdtemp(dir_template);
    NodeFile file(dir, bytes);
    const std::string path = file.path();
    CHECK(path.rfind(dir + "/rudra-data-", 0) == 0);
    SharedBytes mapped = map_shared_file(path, bytes.size());
    file.remove();  // the mapping outlives the name, as on a node
    CHECK(access(path.c_str(), F_OK) != 0);
    REQUIRE(mapped.data != nullptr);
    CHECK(std::equal(bytes.begin(), bytes.end(), mapped.data));
    TrainTest v = view_train_test(mapped.data, mapped.size, std::move(mapped.keep));
    mapped = SharedBytes{};  // only the training set keeps the mapping now
    CHECK(v.format == "idx");
    CHECK(v.train.pixels.empty());
    REQUIRE(v.train.mapped != nullptr);
    CHECK(v.train.size() == t.train.size());
    for (int64_t i = 0; i < t.train.size(); ++i)
        CHECK(std::equal(t.train.sample(i), t.train.sample(i) + t.train.sample_bytes(), v.train.sample(i)));
    CHECK(v.train.labels == t.train.labels);
    CHECK(v.test.mapped == nullptr);  // the test set is copied out
    CHECK(v.test.pixels == t.test.pixels);
    // A viewed set packs to the same bytes, and truncating it shortens what is read.
    CHECK(pack_train_test(v) == bytes);
    v.train.truncate(3);
    CHECK(v.train.size() == 3);
    CHECK(v.train.sample(2)[5] == 25);
    v.train.release_pixels();
    CHECK(v.train.pixel_data() == nullptr);
    CHECK(v.train.size() == 3);  // the labels stay

    // The heap stands in where no file could be shared.
    const SharedBytes held = hold_bytes(bytes);
    CHECK(held.size == bytes.size());
    CHECK(std::equal(bytes.begin(), bytes.end(), held.data));
    const TrainTest h = view_train_test(held.data, held.size, held.keep);
    CHECK(std::equal(t.train.sample(4), t.train.sample(4) + 6, h.train.sample(4)));

    // Failures name the file and the reason, and leave nothing behind.
    CHECK_THROWS_WITH(NodeFile(dir + "/none", bytes), doctest::Contains("cannot create a file"));
    CHECK_THROWS_WITH(map_shared_file(dir + "/none", 4), doctest::Contains((dir + "/none: cannot open").c_str()));
    {
        const NodeFile other(dir, bytes);
        CHECK_THROWS_WITH(map_shared_file(other.path(), bytes.size() + 1), doctest::Contains("bytes, expected"));
    }  // removed by its destructor
    CHECK_THROWS_WITH_AS(view_train_test(bytes.data(), bytes.size() - 3, held.keep), doctest::Contains("truncated"),
                         DataError);
    CHECK(rmdir(dir.c_str()) == 0);  // empty
}

TEST_CASE("a dead job's node file is removed at the next start; a live writer's is not") {
    char dir_template[] = "/tmp/rudra-test-stale-XXXXXX";
    const std::string dir = mkdtemp(dir_template);
    const std::vector<uint8_t> bytes(100, 7);
    const auto age = [&](const std::string& path, int seconds) {
        const timespec past[2] = {{time(nullptr) - seconds, 0}, {time(nullptr) - seconds, 0}};
        REQUIRE(utimensat(AT_FDCWD, path.c_str(), past, 0) == 0);
    };
    NodeFile live(dir, bytes);
    age(live.path(), 60);
    // A dead writer's file: the same bytes with nobody's claim on it.
    const std::string dead = dir + "/rudra-data-dead01";
    { std::ofstream(dead, std::ios::binary) << "leftover"; }
    age(dead, 60);
    // One just created, not yet claimed: too young to be judged.
    const std::string young = dir + "/rudra-data-young1";
    { std::ofstream(young, std::ios::binary) << "new"; }
    const std::string other = dir + "/not-ours";
    { std::ofstream(other, std::ios::binary) << "x"; }
    age(other, 60);
    const std::vector<std::string> removed = remove_stale_shared_files(dir);
    REQUIRE(removed.size() == 1);
    CHECK(removed[0] == "rudra-data-dead01");
    CHECK(access(dead.c_str(), F_OK) != 0);
    CHECK(access(live.path().c_str(), F_OK) == 0);
    CHECK(access(young.c_str(), F_OK) == 0);
    CHECK(access(other.c_str(), F_OK) == 0);
    CHECK(remove_stale_shared_files(dir + "/none").empty());
    live.remove();
    for (const std::string& p : {young, other}) unlink(p.c_str());
    CHECK(rmdir(dir.c_str()) == 0);
}
