#include <zlib.h>

#include <cstring>

#include "test/fuzz/fuzz_target.h"

namespace rudra::fuzz {

std::string with_fixed_crc(const uint8_t* data, size_t size) {
    if (size == 0) return {};
    std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    if ((data[0] & 1) && bytes.size() >= 4) {
        const uint32_t crc = static_cast<uint32_t>(
            crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size() - 4)));
        std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
    }
    return bytes;
}

}  // namespace rudra::fuzz
