// Training snapshots: weights, solver history and the data position, in a versioned binary file
// with a CRC-32 over everything. Written atomically (nn/atomic_file.h): a crash never leaves a
// half-written snapshot under the real name.
//
// Layout (little-endian): "RUDRASNP" | u32 version | u64 iteration | u64 samples_seen |
// u64 data_seed | u64 layout_hash | u32 solver_type | u64 n_params | f32[n_params] |
// u64 n_history | f32[n_history] | (version 2) u64 n_metadata | char[n_metadata] |
// u32 crc32 of all bytes before it. Version 1 files (no metadata) are still read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rudra::nn {

struct Snapshot {
    uint64_t iteration = 0;
    uint64_t samples_seen = 0;  // position in the seeded sample stream
    uint64_t data_seed = 0;
    uint64_t layout_hash = 0;
    uint32_t solver_type = 0;
    std::vector<float> params;   // the parameter arena, padding included
    std::vector<float> history;  // the solver history arena
    // Whatever the writer needs to go on besides weights and history (a distributed run's
    // checkpoint keeps its settings and statistics here as JSON); empty for plain snapshots.
    std::string metadata;
};

constexpr uint32_t kSnapshotVersion = 2;

void write_snapshot(const std::string& path, const Snapshot& s);
// The bytes write_snapshot writes.
std::string snapshot_bytes(const Snapshot& s);
// Throws std::runtime_error naming the file and the problem (bad magic, version, size, checksum).
Snapshot read_snapshot(const std::string& path);
// The same from the file's bytes; `path` names them in errors.
Snapshot parse_snapshot(const std::string& bytes, const std::string& path);

}  // namespace rudra::nn
