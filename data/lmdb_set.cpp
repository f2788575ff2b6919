// Caffe LMDBs of Datums, read record by record (data/sample_reader.h).
#include <lmdb.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "data/datum.h"
#include "data/sample_reader.h"
#include "data/stored_image.h"

namespace rudra::data {
namespace {

namespace fs = std::filesystem;

// One key in this many is kept: a record is found from the nearest kept key by stepping the
// cursor, which reads only the B-tree's leaves (an image's bytes sit on overflow pages), so
// the index of a 1.2M-record set costs a few MB.
constexpr int64_t kKeyStride = 16;

void check(int rc, const std::string& path, const char* call) {
    if (rc != MDB_SUCCESS) throw DataError(path + ": " + call + ": " + mdb_strerror(rc));
}

class LmdbReader final : public SampleReader {
public:
    LmdbReader(const std::string& path, const ImageOptions& o) : path_(path), options_(o) {
        MDB_env* env = nullptr;
        check(mdb_env_create(&env), path, "mdb_env_create");
        env_.reset(env);  // closed however the constructor ends
        // Read-only and without the lock file: the set is not written while it is read, and its
        // folder may be read-only (a shared file system). No read-ahead: samples are drawn at
        // random.
        const unsigned flags = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS | MDB_NORDAHEAD |
                               (fs::is_directory(path) ? 0u : static_cast<unsigned>(MDB_NOSUBDIR));
        const int rc = mdb_env_open(env_.get(), path.c_str(), flags, 0444);
        if (rc != MDB_SUCCESS) throw DataError(path + ": not a readable LMDB (" + mdb_strerror(rc) + ")");
        Txn txn(env_.get(), path);
        check(mdb_dbi_open(txn.t, nullptr, 0, &dbi_), path, "mdb_dbi_open");
        MDB_cursor* cur = nullptr;
        check(mdb_cursor_open(txn.t, dbi_, &cur), path, "mdb_cursor_open");
        MDB_val key, value;
        int rc2 = mdb_cursor_get(cur, &key, &value, MDB_FIRST);
        std::vector<uint8_t> first;
        for (; rc2 == MDB_SUCCESS; rc2 = mdb_cursor_get(cur, &key, &value, MDB_NEXT)) {
            if (count_ == 0) first.assign(static_cast<uint8_t*>(value.mv_data),
                                          static_cast<uint8_t*>(value.mv_data) + value.mv_size);
            if (count_ % kKeyStride == 0) {
                key_at_.push_back(keys_.size());
                keys_.append(static_cast<const char*>(key.mv_data), key.mv_size);
            }
            ++count_;
        }
        mdb_cursor_close(cur);
        if (rc2 != MDB_NOTFOUND) check(rc2, path, "reading the keys");
        key_at_.push_back(keys_.size());
        if (count_ == 0) throw DataError(path + ": the LMDB holds no records");
        const std::string what = record_name(0, "");
        const Datum d = parse_datum(first.data(), first.size(), what);
        if (d.encoded) {
            shape_ = shape_of_first(d.data, d.data_size, o, what);
        } else {
            shape_.channels = static_cast<int>(d.channels);
            shape_.height = static_cast<int>(d.height);
            shape_.width = static_cast<int>(d.width);
        }
    }

    int64_t count() const { return count_; }
    const SetShape& shape() const { return shape_; }

    int read(int64_t i, uint8_t* out, DecodeBuffers& buffers) const override {
        Txn txn(env_.get(), path_);
        MDB_cursor* cur = nullptr;
        check(mdb_cursor_open(txn.t, dbi_, &cur), path_, "mdb_cursor_open");
        std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cur, mdb_cursor_close);
        const int64_t k = i / kKeyStride;
        MDB_val key{key_at_[k + 1] - key_at_[k], const_cast<char*>(keys_.data() + key_at_[k])};
        MDB_val value;
        int rc = mdb_cursor_get(cur, &key, &value, MDB_SET_KEY);
        for (int64_t step = k * kKeyStride; rc == MDB_SUCCESS && step < i; ++step)
            rc = mdb_cursor_get(cur, &key, &value, MDB_NEXT);
        if (rc != MDB_SUCCESS)
            throw DataError(record_name(i, "") + ": cannot be read (" + mdb_strerror(rc) +
                            "): the LMDB changed since it was opened");
        const std::string what =
            record_name(i, std::string(static_cast<const char*>(key.mv_data), key.mv_size));
        const Datum d = parse_datum(static_cast<const uint8_t*>(value.mv_data), value.mv_size, what);
        if (d.encoded) {
            decode_to_shape(d.data, d.data_size, shape_, out, what, buffers);
        } else {
            if (d.channels != shape_.channels || d.height != shape_.height || d.width != shape_.width)
                throw DataError(what + ": a Datum of " + std::to_string(d.channels) + " x " +
                                std::to_string(d.height) + " x " + std::to_string(d.width) + " in a set of " +
                                std::to_string(shape_.channels) + " x " + std::to_string(shape_.height) + " x " +
                                std::to_string(shape_.width) + " (its first record's shape)");
            if (d.data_size) {
                std::memcpy(out, d.data, d.data_size);
            } else {
                // float_data: Caffe stores pixel values in it for sets that are not bytes.
                for (size_t p = 0; p < d.float_data.size(); ++p) {
                    const float v = d.float_data[p];
                    if (!(v >= 0.0f && v <= 255.0f))
                        throw DataError(what + ": float_data value " + std::to_string(v) +
                                        " is not a pixel value in [0, 255]");
                    out[p] = static_cast<uint8_t>(v + 0.5f);
                }
            }
        }
        return checked_label(d.label, what);
    }

private:
    struct Txn {
        MDB_txn* t = nullptr;
        Txn(MDB_env* env, const std::string& path) { check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &t), path, "mdb_txn_begin"); }
        ~Txn() { mdb_txn_abort(t); }
    };
    std::string record_name(int64_t i, const std::string& key) const {
        return path_ + ": record " + std::to_string(i) + (key.empty() ? "" : " (key '" + key + "')");
    }

    std::string path_;
    ImageOptions options_;
    std::unique_ptr<MDB_env, void (*)(MDB_env*)> env_{nullptr, mdb_env_close};
    MDB_dbi dbi_ = 0;
    int64_t count_ = 0;
    std::string keys_;             // every kKeyStride-th key, one after another
    std::vector<size_t> key_at_;   // where each kept key starts in keys_, and the end
    SetShape shape_;
};

}  // namespace

bool is_lmdb(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return fs::exists(fs::path(path) / "data.mdb", ec);
    return fs::is_regular_file(path, ec) && fs::path(path).extension() == ".mdb";
}

Dataset open_lmdb(const std::string& path, const ImageOptions& o) {
    if (!fs::exists(path)) throw DataError(path + ": no such LMDB");
    auto reader = std::make_shared<LmdbReader>(path, o);
    Dataset d;
    d.source = d.label_source = path;
    d.channels = reader->shape().channels;
    d.height = reader->shape().height;
    d.width = reader->shape().width;
    d.streamed = reader->count();
    d.reader = reader;
    return d;
}

}  // namespace rudra::data
