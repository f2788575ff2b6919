// Bytes that the processes of one node share: one copy, written once into a file in memory
// (/dev/shm) and mapped read-only by each process, as the paper's learners read their samples
// from one shared file system instead of holding the data set each.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rudra::data {

struct SharedBytes {
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::shared_ptr<const void> keep;  // the mapping (or the heap copy): alive while it is
};

// A node's shared file, claimed by its writer for as long as it has a name: the writer holds a
// shared lock on it (flock), which the kernel drops when the writer dies, however it dies. A
// file whose lock is free is a dead job's leftover (remove_stale_shared_files).
class NodeFile {
public:
    // Writes `bytes` into a new file "rudra-data-XXXXXX" in `dir` (only this user may read it).
    // Throws std::runtime_error naming the file and the reason when it cannot (no such
    // directory, no room); leaves no partial file behind.
    NodeFile(const std::string& dir, const std::vector<uint8_t>& bytes);
    ~NodeFile();  // remove()
    NodeFile(const NodeFile&) = delete;
    NodeFile& operator=(const NodeFile&) = delete;
    const std::string& path() const { return path_; }
    // Unlinks the file (mappings of it stay valid) and releases the claim.
    void remove();

private:
    std::string path_;
    int fd_ = -1;
};

// Removes the "rudra-data-*" files in `dir` that no live writer claims and that are older than
// `min_age_s` (a file is claimed within microseconds of its creation); returns their names.
std::vector<std::string> remove_stale_shared_files(const std::string& dir, double min_age_s = 10.0);

// Maps `path` read-only. Throws std::runtime_error if it cannot, or if the file is not `size`
// bytes long. The file may be removed once every process has mapped it.
SharedBytes map_shared_file(const std::string& path, size_t size);

// The bytes held on this process's heap: the same interface where no file could be shared.
SharedBytes hold_bytes(std::vector<uint8_t> bytes);

}  // namespace rudra::data
