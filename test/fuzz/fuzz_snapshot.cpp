// The snapshot reader. A random file almost never carries a valid CRC, which would stop the
// reader at the checksum: when the first byte is odd, the target writes the right CRC into the
// last 4 bytes, so that the fields behind it are reached. An accepted snapshot must write back
// to the same bytes.
#include <cstring>

#include "nn/snapshot.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    if (size == 0) return 0;
    const std::string bytes = fuzz::with_fixed_crc(data, size);
    try {
        const nn::Snapshot s = nn::parse_snapshot(bytes, fuzz::kInputName);
        const std::string again = nn::snapshot_bytes(s);
        // Version 1 files (no metadata) are written back as version 2: compare what both hold,
        // bit for bit (a NaN weight is not equal to itself).
        const nn::Snapshot back = nn::parse_snapshot(again, fuzz::kInputName);
        fuzz::require(back.params.size() == s.params.size() &&
                          (s.params.empty() ||
                           std::memcmp(back.params.data(), s.params.data(), s.params.size() * sizeof(float)) == 0),
                      "weights survive a round trip");
        uint32_t version = 0;
        std::memcpy(&version, bytes.data() + 8, 4);
        if (version == nn::kSnapshotVersion) fuzz::require(again == bytes, "a version-2 snapshot writes back unchanged");
    } catch (const std::exception& e) {
        fuzz::require_named(e);
    }
    return 0;
}
