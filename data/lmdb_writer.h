// Writes an LMDB the way Caffe's convert_imageset does (one transaction per 1000 records), for
// `rudra convert`. The database grows as it is written (a 1 TiB map of which only the written
// pages take disk space).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;

namespace rudra::data {

class LmdbWriter {
public:
    // Creates the folder `dir` (it must not exist) holding data.mdb and lock.mdb. Throws
    // DataError naming it.
    explicit LmdbWriter(const std::string& dir);
    ~LmdbWriter();  // without finish(): the records since the last commit are dropped
    LmdbWriter(const LmdbWriter&) = delete;
    LmdbWriter& operator=(const LmdbWriter&) = delete;

    void put(const std::string& key, const std::vector<uint8_t>& value);
    void finish();  // commits the rest and closes the database
    int64_t records() const { return records_; }

private:
    void begin();
    void commit();

    std::string dir_;
    MDB_env* env_ = nullptr;
    MDB_txn* txn_ = nullptr;
    unsigned dbi_ = 0;
    int64_t records_ = 0, in_txn_ = 0;
};

}  // namespace rudra::data
