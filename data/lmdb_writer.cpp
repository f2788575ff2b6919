#include "data/lmdb_writer.h"

#include <lmdb.h>

#include <filesystem>

#include "data/dataset.h"

namespace rudra::data {
namespace {

void check(int rc, const std::string& dir, const char* call) {
    if (rc != MDB_SUCCESS) throw DataError(dir + ": " + call + ": " + mdb_strerror(rc));
}

}  // namespace

LmdbWriter::LmdbWriter(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec)) throw DataError(dir + ": exists already (an LMDB is written into a new folder)");
    if (const auto parent = std::filesystem::path(dir).parent_path(); !parent.empty())
        std::filesystem::create_directories(parent, ec);
    if (!std::filesystem::create_directory(dir, ec)) throw DataError(dir + ": cannot create the folder: " + ec.message());
    check(mdb_env_create(&env_), dir, "mdb_env_create");
    try {
        check(mdb_env_set_mapsize(env_, size_t{1} << 40), dir, "mdb_env_set_mapsize");
        const int rc = mdb_env_open(env_, dir.c_str(), 0, 0664);
        if (rc != MDB_SUCCESS) throw DataError(dir + ": cannot create the LMDB: " + mdb_strerror(rc));
        begin();
        MDB_dbi dbi;
        check(mdb_dbi_open(txn_, nullptr, 0, &dbi), dir, "mdb_dbi_open");
        dbi_ = dbi;
    } catch (...) {
        // The destructor does not run for a constructor that throws.
        if (txn_) mdb_txn_abort(txn_);
        mdb_env_close(env_);
        throw;
    }
}

LmdbWriter::~LmdbWriter() {
    if (txn_) mdb_txn_abort(txn_);
    if (env_) mdb_env_close(env_);
}

void LmdbWriter::begin() { check(mdb_txn_begin(env_, nullptr, 0, &txn_), dir_, "mdb_txn_begin"); }

void LmdbWriter::commit() {
    const int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    check(rc, dir_, "mdb_txn_commit");
    in_txn_ = 0;
}

void LmdbWriter::put(const std::string& key, const std::vector<uint8_t>& value) {
    if (key.empty() || key.size() > 511) throw DataError(dir_ + ": LMDB keys are 1 to 511 bytes: '" + key + "'");
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    MDB_val v{value.size(), const_cast<uint8_t*>(value.data())};
    check(mdb_put(txn_, dbi_, &k, &v, 0), dir_, "mdb_put");
    ++records_;
    if (++in_txn_ == 1000) {
        commit();
        begin();
    }
}

void LmdbWriter::finish() {
    commit();
    mdb_env_sync(env_, 1);
    mdb_env_close(env_);
    env_ = nullptr;
}

}  // namespace rudra::data
