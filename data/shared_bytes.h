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

// Writes `bytes` into a new file in `dir` (only this user may read it) and returns its path.
// Throws std::runtime_error naming the file and the reason when it cannot (no such directory,
// no room); leaves no partial file behind.
std::string write_shared_file(const std::string& dir, const std::vector<uint8_t>& bytes);

// Maps `path` read-only. Throws std::runtime_error if it cannot, or if the file is not `size`
// bytes long. The file may be removed once every process has mapped it.
SharedBytes map_shared_file(const std::string& path, size_t size);

// The bytes held on this process's heap: the same interface where no file could be shared.
SharedBytes hold_bytes(std::vector<uint8_t> bytes);

}  // namespace rudra::data
