// Image data sets: Caffe's Datum decoder, JPEG/PNG decoding and resizing, LMDB, list and
// class-folder readers, the decode pool. Writers here are rudra's own encoders and liblmdb's C
// API; test/image_data_test.sh checks the same readers against independent writers (PIL,
// python3-lmdb).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <lmdb.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "data/batch_stream.h"
#include "data/datum.h"
#include "data/image_decode.h"
#include "data/mean_file.h"
#include "data/sample_reader.h"
#include "data/worker_pool.h"

using namespace rudra::data;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        char tmpl[] = "/tmp/rudra-image-test-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() { fs::remove_all(path); }
};

Image pattern(int channels, int h, int w, int seed) {
    Image img;
    img.channels = channels;
    img.height = h;
    img.width = w;
    img.planes.resize(static_cast<size_t>(channels) * h * w);
    for (int c = 0; c < channels; ++c)
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                img.planes[(static_cast<size_t>(c) * h + y) * w + x] =
                    static_cast<uint8_t>((x * 7 + y * 3 + c * 60 + seed * 11) % 256);
    return img;
}

void write(const fs::path& p, const std::vector<uint8_t>& b) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_lmdb(const fs::path& dir, const std::vector<std::vector<uint8_t>>& records) {
    fs::create_directories(dir);
    MDB_env* env;
    REQUIRE(mdb_env_create(&env) == 0);
    REQUIRE(mdb_env_set_mapsize(env, 1 << 26) == 0);
    REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0664) == 0);
    MDB_txn* txn;
    MDB_dbi dbi;
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == 0);
    for (size_t i = 0; i < records.size(); ++i) {
        char key[24];
        std::snprintf(key, sizeof key, "%08zu", i);
        MDB_val k{std::strlen(key), key}, v{records[i].size(), const_cast<uint8_t*>(records[i].data())};
        REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    }
    REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
}

std::vector<uint8_t> read_sample(const Dataset& d, int64_t i, int* label = nullptr) {
    ReadScratch scratch;
    const uint8_t* p = nullptr;
    const int l = d.read(i, scratch, p);
    if (label) *label = l;
    return std::vector<uint8_t>(p, p + d.sample_bytes());
}

}  // namespace

TEST_CASE("Datum: fields in any order, unknown ones skipped, lengths checked") {
    const uint8_t px[6] = {1, 2, 3, 4, 5, 6};
    std::vector<uint8_t> b = encode_datum(1, 2, 3, px, 6, 7, false);
    Datum d = parse_datum(b.data(), b.size(), "rec");
    CHECK(d.channels == 1);
    CHECK(d.height == 2);
    CHECK(d.width == 3);
    CHECK(d.label == 7);
    REQUIRE(d.data_size == 6);
    CHECK(std::memcmp(d.data, px, 6) == 0);
    // An unknown varint field (99) and an unknown length-delimited one (100) before the rest.
    std::vector<uint8_t> extra = {0x98, 0x06, 0x05, 0xa2, 0x06, 0x02, 0xaa, 0xbb};
    extra.insert(extra.end(), b.begin(), b.end());
    CHECK(parse_datum(extra.data(), extra.size(), "rec").label == 7);
    // float_data (field 6, packed) instead of bytes.
    std::vector<uint8_t> f = {0x08, 1, 0x10, 1, 0x18, 2, 0x32, 8};
    const float vals[2] = {3.0f, 250.0f};
    const auto* vb = reinterpret_cast<const uint8_t*>(vals);
    f.insert(f.end(), vb, vb + 8);
    CHECK(parse_datum(f.data(), f.size(), "rec").float_data == std::vector<float>{3.0f, 250.0f});
    // Every cut of the record is refused with the record named, never read past its end, but
    // for the cut before the label: a message without a field is valid protobuf (label 0).
    for (size_t n = 1; n < b.size(); ++n) {
        if (n == b.size() - 2) {
            CHECK(parse_datum(b.data(), n, "rec").label == 0);
            continue;
        }
        bool refused = false;
        try {
            parse_datum(b.data(), n, "rec 5");
        } catch (const DataError& e) {
            refused = std::string(e.what()).rfind("rec 5: ", 0) == 0;
        }
        CHECK_MESSAGE(refused, "cut at " << n);
    }
    std::vector<uint8_t> small = encode_datum(1, 2, 4, px, 6, 0, false);
    CHECK_THROWS_WITH_AS(parse_datum(small.data(), small.size(), "r"),
                         doctest::Contains("data holds 6 bytes, its shape 1 x 2 x 4 needs 8"), DataError);
}

TEST_CASE("PNG is lossless both ways; JPEG is close; colour is B, G, R planes") {
    for (int channels : {1, 3}) {
        const Image img = pattern(channels, 19, 23, channels);
        const std::vector<uint8_t> png = encode_png(img);
        const Image back = decode_image(png.data(), png.size(), 0, 0, 0, "p.png");
        CHECK(back.channels == channels);
        CHECK(back.height == 19);
        CHECK(back.width == 23);
        CHECK(back.planes == img.planes);
        // JPEG on a smooth image (its sharp edges would be smeared by design).
        Image smooth = img;
        for (size_t i = 0; i < smooth.planes.size(); ++i) smooth.planes[i] = static_cast<uint8_t>(40 + (i % 23) * 5 + (i / 437) * 30);
        const std::vector<uint8_t> jpg = encode_jpeg(smooth, 95);
        const Image j = decode_image(jpg.data(), jpg.size(), 0, 0, 0, "p.jpg");
        REQUIRE(j.planes.size() == smooth.planes.size());
        double err = 0;
        for (size_t i = 0; i < smooth.planes.size(); ++i) err += std::abs(int(j.planes[i]) - int(smooth.planes[i]));
        CHECK(err / smooth.planes.size() < 4.0);
    }
    // A pure red image: plane 2 (R) is bright, plane 0 (B) dark, as OpenCV gives it to Caffe.
    Image red = pattern(3, 8, 8, 0);
    std::fill(red.planes.begin(), red.planes.end(), 0);
    std::fill(red.planes.begin() + 128, red.planes.end(), 255);
    const std::vector<uint8_t> png = encode_png(red);
    const Image back = decode_image(png.data(), png.size(), 3, 0, 0, "red.png");
    CHECK(back.planes[0] == 0);
    CHECK(back.planes[128] == 255);
    // Grey decode of a colour file, colour decode of a grey one.
    CHECK(decode_image(png.data(), png.size(), 1, 0, 0, "red.png").channels == 1);
}

TEST_CASE("decoding at a smaller size: DCT scaling then bilinear gives the box average of a smooth image") {
    Image img = pattern(3, 256, 320, 2);
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 256; ++y)
            for (int x = 0; x < 320; ++x) img.planes[(static_cast<size_t>(c) * 256 + y) * 320 + x] = static_cast<uint8_t>(x / 2 + c * 20);
    const std::vector<uint8_t> jpg = encode_jpeg(img, 95);
    const Image small = decode_image(jpg.data(), jpg.size(), 3, 64, 80, "big.jpg");
    CHECK(small.height == 64);
    CHECK(small.width == 80);
    for (int x : {5, 40, 75}) CHECK(std::abs(int(small.planes[30 * 80 + x]) - (4 * x + 2) / 2) <= 3);
    std::vector<uint8_t> same(3 * 4 * 4);
    const Image tiny = pattern(3, 4, 4, 1);
    resize_bilinear(tiny.planes.data(), 3, 4, 4, same.data(), 4, 4);
    CHECK(same == tiny.planes);
}

TEST_CASE("bad image files are refused with their names") {
    const Image img = pattern(3, 32, 32, 1);
    std::vector<uint8_t> jpg = encode_jpeg(img, 90);
    std::vector<uint8_t> png = encode_png(img);
    jpg.resize(jpg.size() / 2);
    CHECK_THROWS_WITH_AS(decode_image(jpg.data(), jpg.size(), 3, 0, 0, "cut.jpg"),
                         doctest::Contains("cut.jpg: corrupt or truncated JPEG"), DataError);
    png.resize(png.size() / 2);
    CHECK_THROWS_WITH_AS(decode_image(png.data(), png.size(), 3, 0, 0, "cut.png"),
                         doctest::Contains("cut.png: corrupt or truncated PNG"), DataError);
    const uint8_t text[] = "hello";
    CHECK_THROWS_WITH_AS(decode_image(text, 5, 3, 0, 0, "x.jpg"), doctest::Contains("x.jpg: not a JPEG or PNG file"),
                         DataError);
    CHECK_THROWS_AS(decode_image(text, 0, 3, 0, 0, "empty.jpg"), DataError);
}

TEST_CASE("LMDB of raw and encoded Datums: every record, its label, found from the sparse key index") {
    TempDir t;
    std::vector<std::vector<uint8_t>> raw, encoded;
    std::vector<Image> images;
    for (int i = 0; i < 53; ++i) {  // more than three key strides
        images.push_back(pattern(3, 6, 5, i));
        raw.push_back(encode_datum(3, 6, 5, images.back().planes.data(), images.back().planes.size(), i % 7, false));
        const std::vector<uint8_t> png = encode_png(images.back());
        encoded.push_back(encode_datum(0, 0, 0, png.data(), png.size(), i % 7, true));
    }
    write_lmdb(t.path / "raw", raw);
    write_lmdb(t.path / "enc", encoded);
    CHECK(is_lmdb((t.path / "raw").string()));
    CHECK_FALSE(is_lmdb(t.path.string()));
    for (const char* name : {"raw", "enc"}) {
        const Dataset d = open_lmdb((t.path / name).string(), ImageOptions{});
        CHECK(d.is_streamed());
        CHECK(d.size() == 53);
        CHECK(d.channels == 3);
        CHECK(d.height == 6);
        CHECK(d.width == 5);
        for (int i : {0, 1, 15, 16, 17, 33, 52}) {
            int label = -1;
            CHECK(read_sample(d, i, &label) == images[i].planes);
            CHECK(label == i % 7);
        }
        d.reader->limit_labels(5);
        CHECK_THROWS_WITH_AS(read_sample(d, 6), doctest::Contains("record 6 (key '00000006'): label 6 is not one of the net's 5 classes"),
                             DataError);
    }
    // A Datum of another shape, and an empty LMDB.
    raw[20] = encode_datum(3, 5, 6, images[0].planes.data(), 90, 0, false);
    write_lmdb(t.path / "mixed", raw);
    const Dataset mixed = open_lmdb((t.path / "mixed").string(), ImageOptions{});
    CHECK_THROWS_WITH_AS(read_sample(mixed, 20), doctest::Contains("record 20 (key '00000020'): a Datum of 3 x 5 x 6"),
                         DataError);
    write_lmdb(t.path / "empty", {});
    CHECK_THROWS_WITH_AS(open_lmdb((t.path / "empty").string(), ImageOptions{}), doctest::Contains("holds no records"),
                         DataError);
    write(t.path / "junk" / "data.mdb", std::vector<uint8_t>(9000, 7));
    CHECK_THROWS_WITH_AS(open_lmdb((t.path / "junk").string(), ImageOptions{}), doctest::Contains("not a readable LMDB"),
                         DataError);
}

TEST_CASE("class folders: classes by name, files by name, resized on request; lists keep their lines") {
    TempDir t;
    const char* classes[] = {"cat", "ant", "bee"};  // numbered ant 0, bee 1, cat 2
    for (int c = 0; c < 3; ++c)
        for (int i = 0; i < 2; ++i) write(t.path / "set" / classes[c] / ("f" + std::to_string(i) + ".png"), encode_png(pattern(1, 10, 12, c * 2 + i)));
    write(t.path / "set" / "ant" / "notes.txt", {'h', 'i'});
    CHECK(is_class_folder_set((t.path / "set").string()));
    const Dataset d = open_class_folders((t.path / "set").string(), ImageOptions{});
    CHECK(d.size() == 6);
    CHECK(d.num_classes == 3);
    CHECK(d.channels == 1);
    int label = -1;
    CHECK(read_sample(d, 0, &label) == pattern(1, 10, 12, 2).planes);  // ant/f0
    CHECK(label == 0);
    read_sample(d, 5, &label);  // cat/f1
    CHECK(label == 2);
    ImageOptions resize;
    resize.channels = 3;
    resize.new_height = 5;
    resize.new_width = 6;
    const Dataset r = open_class_folders((t.path / "set").string(), resize);
    CHECK(r.channels == 3);
    CHECK(r.height == 5);
    CHECK(r.width == 6);
    CHECK(read_sample(r, 3).size() == 90);
    // A list: paths relative to the root folder, the label after the last space, line numbers
    // in errors.
    std::ofstream(t.path / "list.txt") << "ant/f1.png 4\n\nbee/f0.png 1\r\n";
    const Dataset l = open_image_list((t.path / "list.txt").string(), (t.path / "set").string() + "/", ImageOptions{});
    CHECK(l.size() == 2);
    CHECK(l.num_classes == 5);
    read_sample(l, 1, &label);
    CHECK(label == 1);
    std::ofstream(t.path / "bad.txt") << "ant/f1.png 4\nant/nope.png 1\n";
    CHECK_THROWS_WITH_AS(open_image_list((t.path / "bad.txt").string(), (t.path / "set").string() + "/", ImageOptions{}),
                         doctest::Contains("bad.txt:2: no such image file"), DataError);
    // Another size without a resize is refused, naming the file.
    write(t.path / "set" / "bee" / "g.png", encode_png(pattern(1, 11, 12, 0)));
    const Dataset m = open_class_folders((t.path / "set").string(), ImageOptions{});
    CHECK_THROWS_WITH_AS(read_sample(m, 4), doctest::Contains("g.png: a 12x11 image in a set of 12x10"), DataError);
}

TEST_CASE("the decode pool runs every item once, on one worker at a time, and passes the first error on") {
    WorkerPool pool(4);
    CHECK(pool.threads() == 4);
    for (int round = 0; round < 20; ++round) {
        std::vector<std::atomic<int>> seen(97);
        std::vector<std::atomic<int>> busy(pool.threads());  // items a worker runs at once: 0 or 1
        std::atomic<int> overlaps{0}, outside{0};
        pool.run(97, [&](int64_t i, int worker) {
            if (worker < 0 || worker >= pool.threads()) {
                outside++;
                return;
            }
            if (busy[worker]++ != 0) overlaps++;
            seen[i]++;
            busy[worker]--;
        });
        CHECK(outside.load() == 0);
        CHECK(overlaps.load() == 0);
        for (auto& s : seen) CHECK(s.load() == 1);
    }
    CHECK_THROWS_WITH(pool.run(10, [](int64_t i, int) {
                          if (i == 3) throw DataError("item 3");
                      }),
                      "item 3");
    std::atomic<int> after{0};
    pool.run(5, [&](int64_t, int) { after++; });
    CHECK(after.load() == 5);
}

TEST_CASE("a streamed set's batches are the same with 1 or 3 decode threads") {
    TempDir t;
    std::vector<std::vector<uint8_t>> records;
    for (int i = 0; i < 40; ++i) {
        const Image img = pattern(3, 8, 8, i);
        const std::vector<uint8_t> png = encode_png(img);
        records.push_back(encode_datum(0, 0, 0, png.data(), png.size(), i % 4, true));
    }
    write_lmdb(t.path / "set", records);
    const Dataset d = open_lmdb((t.path / "set").string(), ImageOptions{});
    Transform tf;
    tf.crop = 6;
    tf.mirror = true;
    tf.scale = 0.5f;
    Prefetcher one(d, tf, 8, 9, 0, {}, 1), three(d, tf, 8, 9, 0, {}, 3);
    for (int b = 0; b < 12; ++b) {
        const Batch& x = one.next();
        const Batch& y = three.next();
        CHECK(x.data == y.data);
        CHECK(x.labels == y.labels);
    }
}

TEST_CASE("mean files: Caffe's BlobProto, legacy or shape dimensions, packed or single floats") {
    MeanImage m;
    m.channels = 2;
    m.height = 1;
    m.width = 3;
    m.values = {1, 2, 3, 4.5f, 5, 6};
    const std::vector<uint8_t> b = encode_mean_blob(m);
    const MeanImage back = parse_mean_blob(b.data(), b.size(), "m");
    CHECK(back.channels == 2);
    CHECK(back.width == 3);
    CHECK(back.values == m.values);
    // shape { dim: 1 dim: 1 dim: 2 dim: 2 } and four unpacked floats (field 5, wire type 5).
    std::vector<uint8_t> s = {0x3a, 0x06, 0x0a, 0x04, 1, 1, 2, 2};
    for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) {
        s.push_back(0x2d);
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        s.insert(s.end(), p, p + 4);
    }
    const MeanImage shaped = parse_mean_blob(s.data(), s.size(), "s");
    CHECK(shaped.channels == 1);
    CHECK(shaped.height == 2);
    CHECK(shaped.values == std::vector<float>{1, 2, 3, 4});
    s.resize(s.size() - 5);
    CHECK_THROWS_WITH_AS(parse_mean_blob(s.data(), s.size(), "s"), doctest::Contains("holds 3 values"), DataError);
    std::vector<uint8_t> cut(b.begin(), b.end() - 2);
    CHECK_THROWS_WITH_AS(parse_mean_blob(cut.data(), cut.size(), "cut.binaryproto"),
                         doctest::Contains("cut.binaryproto: not a Caffe mean file"), DataError);
}
