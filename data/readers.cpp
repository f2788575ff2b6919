#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "data/dataset.h"
#include "data/sample_reader.h"

namespace rudra::data {

namespace fs = std::filesystem;

std::vector<uint8_t> read_maybe_gzip(const std::string& path) {
    if (!fs::exists(path)) throw DataError(path + ": no such file");
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw DataError(path + ": cannot open");
    std::vector<uint8_t> out;
    uint8_t buf[1 << 16];
    for (;;) {
        int n = gzread(f, buf, sizeof buf);
        if (n < 0) {
            int err = 0;
            std::string msg = gzerror(f, &err);
            gzclose(f);
            throw DataError(path + ": corrupt gzip data: " + msg);
        }
        if (n == 0) break;
        out.insert(out.end(), buf, buf + n);
    }
    int err = 0;
    const char* msg = gzerror(f, &err);
    std::string text = msg ? msg : "";
    gzclose(f);
    if (err != Z_OK && err != Z_STREAM_END) throw DataError(path + ": corrupt or truncated gzip data: " + text);
    return out;
}

namespace {

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
    return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) | b[at + 3];
}

struct Idx {
    std::vector<uint32_t> dims;
    size_t data_offset = 0;
};

Idx parse_idx_header(const std::vector<uint8_t>& b, const std::string& path, int want_rank) {
    if (b.empty()) throw DataError(path + ": empty file");
    if (b.size() < 4) throw DataError(path + ": truncated IDX header (" + std::to_string(b.size()) + " bytes)");
    if (b[0] != 0 || b[1] != 0) throw DataError(path + ": not an IDX file (bad magic)");
    if (b[2] != 0x08) throw DataError(path + ": IDX element type " + std::to_string(b[2]) + " is not unsigned byte (0x08)");
    if (b[3] != want_rank)
        throw DataError(path + ": IDX rank " + std::to_string(b[3]) + ", expected " + std::to_string(want_rank));
    Idx h;
    h.data_offset = 4 + 4 * size_t(want_rank);
    if (b.size() < h.data_offset) throw DataError(path + ": truncated IDX header");
    uint64_t total = 1;
    std::string dims;
    for (int i = 0; i < want_rank; ++i) {
        h.dims.push_back(be32(b, 4 + 4 * i));
        dims += (i ? " x " : "") + std::to_string(h.dims.back());
        if (h.dims.back() == 0) throw DataError(path + ": IDX dimension " + std::to_string(i) + " is zero");
        // An image's rows and columns are ints everywhere after this.
        if (i > 0 && h.dims.back() > (1u << 30))
            throw DataError(path + ": IDX dimension " + std::to_string(i) + " is " + std::to_string(h.dims.back()) +
                            ", more than 2^30");
        if (__builtin_mul_overflow(total, uint64_t{h.dims.back()}, &total))
            throw DataError(path + ": the IDX header's dimensions " + dims + " promise more than 2^64 data bytes");
    }
    const uint64_t have = b.size() - h.data_offset;
    if (have < total)
        throw DataError(path + ": truncated: header promises " + std::to_string(total) + " data bytes, file has " +
                        std::to_string(have));
    if (have > total) throw DataError(path + ": " + std::to_string(have - total) + " unexpected bytes after the data");
    return h;
}

void set_classes(Dataset& d) {
    int mx = 0;
    for (uint8_t l : d.labels) mx = std::max<int>(mx, l);
    d.num_classes = d.labels.empty() ? 0 : mx + 1;
}

}  // namespace

int Dataset::read(int64_t i, ReadScratch& scratch, const uint8_t*& out) const {
    if (reader) {
        scratch.sample.resize(static_cast<size_t>(sample_bytes()));
        const int label = reader->read(i, scratch.sample.data(), scratch.decode);
        out = scratch.sample.data();
        return label;
    }
    out = sample(i);
    return labels[i];
}

void Dataset::truncate(int64_t n) {
    if (n >= size()) return;
    if (reader) {
        streamed = n;
        return;
    }
    labels.resize(n);
    if (!mapped) pixels.resize(n * sample_bytes());  // a mapping stays whole; the samples past n go unread
}

void Dataset::release_pixels() {
    std::vector<uint8_t>().swap(pixels);
    mapped = nullptr;
    mapping.reset();
}

Dataset read_idx(const std::string& images_path, const std::string& labels_path) {
    return parse_idx(read_maybe_gzip(images_path), images_path, read_maybe_gzip(labels_path), labels_path);
}

Dataset parse_idx(const std::vector<uint8_t>& ib, const std::string& images_path, const std::vector<uint8_t>& lb,
                  const std::string& labels_path) {
    Idx ih = parse_idx_header(ib, images_path, 3);
    Idx lh = parse_idx_header(lb, labels_path, 1);
    if (ih.dims[0] != lh.dims[0])
        throw DataError(images_path + " has " + std::to_string(ih.dims[0]) + " images but " + labels_path + " has " +
                        std::to_string(lh.dims[0]) + " labels");
    Dataset d;
    d.source = images_path;
    d.label_source = labels_path;
    d.channels = 1;
    d.height = static_cast<int>(ih.dims[1]);
    d.width = static_cast<int>(ih.dims[2]);
    d.pixels.assign(ib.begin() + ih.data_offset, ib.end());
    d.labels.assign(lb.begin() + lh.data_offset, lb.end());
    set_classes(d);
    return d;
}

Dataset read_cifar10(const std::vector<std::string>& files) {
    Dataset d;
    for (const auto& path : files) append_cifar10(d, read_maybe_gzip(path), path);
    return d;
}

void append_cifar10(Dataset& d, const std::vector<uint8_t>& b, const std::string& path) {
    constexpr size_t kPixels = 3 * 32 * 32, kRecord = kPixels + 1;
    if (b.empty()) throw DataError(path + ": empty file");
    if (b.size() % kRecord)
        throw DataError(path + ": truncated: " + std::to_string(b.size()) + " bytes is not a whole number of " +
                        std::to_string(kRecord) + "-byte CIFAR-10 records");
    d.channels = 3;
    d.height = d.width = 32;
    for (size_t r = 0; r < b.size() / kRecord; ++r) {
        const uint8_t label = b[r * kRecord];
        if (label > 9)
            throw DataError(path + ": record " + std::to_string(r) + " has label " + std::to_string(label) +
                            " (CIFAR-10 labels are 0-9)");
        d.labels.push_back(label);
        d.pixels.insert(d.pixels.end(), b.begin() + r * kRecord + 1, b.begin() + (r + 1) * kRecord);
    }
    d.source += (d.source.empty() ? "" : ",") + path;
    d.num_classes = 10;
    d.label_source = d.source;
}

TrainTest load_train_test(const std::string& dir, const std::string& format) {
    if (!fs::is_directory(dir)) throw DataError(dir + ": data directory does not exist");
    auto find = [&](const std::string& base) -> std::string {
        for (const char* ext : {"", ".gz"}) {
            fs::path p = fs::path(dir) / (base + ext);
            if (fs::exists(p)) return p.string();
        }
        return "";
    };
    const std::string idx_train = find("train-images-idx3-ubyte");
    const bool cifar = fs::exists(fs::path(dir) / "data_batch_1.bin");
    TrainTest tt;
    if ((format == "auto" && !idx_train.empty()) || format == "idx") {
        auto need = [&](const std::string& base) {
            std::string p = find(base);
            if (p.empty()) throw DataError(dir + ": missing " + base + "[.gz]");
            return p;
        };
        tt.train = read_idx(need("train-images-idx3-ubyte"), need("train-labels-idx1-ubyte"));
        tt.test = read_idx(need("t10k-images-idx3-ubyte"), need("t10k-labels-idx1-ubyte"));
        tt.format = "idx";
    } else if ((format == "auto" && cifar) || format == "cifar10") {
        std::vector<std::string> batches;
        for (int i = 1; i <= 5; ++i) {
            fs::path p = fs::path(dir) / ("data_batch_" + std::to_string(i) + ".bin");
            if (fs::exists(p)) batches.push_back(p.string());
        }
        if (batches.empty()) throw DataError(dir + ": missing data_batch_1.bin");
        fs::path test = fs::path(dir) / "test_batch.bin";
        if (!fs::exists(test)) throw DataError(dir + ": missing test_batch.bin");
        tt.train = read_cifar10(batches);
        tt.test = read_cifar10({test.string()});
        tt.format = "cifar10";
    } else if (format != "auto" && format != "idx" && format != "cifar10") {
        throw DataError("unknown data format '" + format + "' (auto, idx, cifar10)");
    } else {
        throw DataError(dir + ": no data set found (expected IDX files train-images-idx3-ubyte[.gz] ... or CIFAR-10 "
                              "data_batch_N.bin + test_batch.bin)");
    }
    if (tt.train.channels != tt.test.channels || tt.train.height != tt.test.height || tt.train.width != tt.test.width)
        throw DataError(dir + ": training and test images differ in shape");
    tt.train.num_classes = tt.test.num_classes = std::max(tt.train.num_classes, tt.test.num_classes);
    return tt;
}

}  // namespace rudra::data
