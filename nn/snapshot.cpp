#include "nn/snapshot.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "nn/atomic_file.h"

namespace rudra::nn {
namespace {

constexpr char kMagic[8] = {'R', 'U', 'D', 'R', 'A', 'S', 'N', 'P'};

template <class T>
void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_floats(std::string& out, const std::vector<float>& v) {
    put<uint64_t>(out, v.size());
    if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

class Reader {
public:
    Reader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
    template <class T>
    T get(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, b_.data() + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    std::string text(const char* what) {
        uint64_t n = get<uint64_t>(what);
        if (n > b_.size() - pos_) fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes");
        std::string v(b_.data() + pos_, n);
        pos_ += n;
        return v;
    }
    std::vector<float> floats(const char* what) {
        uint64_t n = get<uint64_t>(what);
        if (n > (b_.size() - pos_) / sizeof(float)) fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " floats");
        std::vector<float> v(n);
        if (n) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(float));  // data() may be null when empty
        pos_ += n * sizeof(float);
        return v;
    }
    size_t pos() const { return pos_; }
    [[noreturn]] void fail(const std::string& problem) const {
        throw std::runtime_error(path_ + ": corrupt snapshot: " + problem);
    }

private:
    void need(size_t n, const char* what) const {
        if (b_.size() - pos_ < n) fail(std::string("truncated while reading ") + what);
    }
    const std::string& b_;
    const std::string& path_;
    size_t pos_ = 0;
};

}  // namespace

void write_snapshot(const std::string& path, const Snapshot& s) { write_file_atomically(path, snapshot_bytes(s)); }

std::string snapshot_bytes(const Snapshot& s) {
    std::string out(kMagic, sizeof kMagic);
    put<uint32_t>(out, kSnapshotVersion);
    put<uint64_t>(out, s.iteration);
    put<uint64_t>(out, s.samples_seen);
    put<uint64_t>(out, s.data_seed);
    put<uint64_t>(out, s.layout_hash);
    put<uint32_t>(out, s.solver_type);
    put_floats(out, s.params);
    put_floats(out, s.history);
    put<uint64_t>(out, s.metadata.size());
    out += s.metadata;
    put<uint32_t>(out, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), out.size())));
    return out;
}

Snapshot read_snapshot(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error(path + ": cannot open snapshot");
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return parse_snapshot(bytes, path);
}

Snapshot parse_snapshot(const std::string& bytes, const std::string& path) {
    Reader r(bytes, path);
    if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        r.fail("not a rudra snapshot (bad magic)");
    if (bytes.size() < sizeof kMagic + 4 + 4) r.fail("truncated");
    const uint32_t stored_crc = [&] {
        uint32_t c;
        std::memcpy(&c, bytes.data() + bytes.size() - 4, 4);
        return c;
    }();
    const uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
    r.get<uint64_t>("magic");
    const uint32_t version = r.get<uint32_t>("version");
    if (version < 1 || version > kSnapshotVersion)
        r.fail("version " + std::to_string(version) + " (this build reads versions 1 to " +
               std::to_string(kSnapshotVersion) + ")");
    if (crc != stored_crc) r.fail("checksum mismatch (file damaged or truncated)");
    Snapshot s;
    s.iteration = r.get<uint64_t>("iteration");
    s.samples_seen = r.get<uint64_t>("samples_seen");
    s.data_seed = r.get<uint64_t>("data_seed");
    s.layout_hash = r.get<uint64_t>("layout_hash");
    s.solver_type = r.get<uint32_t>("solver_type");
    s.params = r.floats("params");
    s.history = r.floats("history");
    if (version >= 2) s.metadata = r.text("metadata");
    if (r.pos() + 4 != bytes.size()) r.fail("unexpected bytes after the history");
    return s;
}

}  // namespace rudra::nn
