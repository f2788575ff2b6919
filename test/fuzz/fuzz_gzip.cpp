// Data files that may be gzip (IDX, CIFAR-10): zlib reads gzip and plain files alike. Any bytes
// are read whole or refused naming the file; a file that is not gzip reads back as itself.
#include <unistd.h>

#include <fstream>

#include "data/dataset.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    static const std::string path = "/tmp/" + fuzz::kInputName + "-" + std::to_string(getpid()) + ".gz";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                   static_cast<std::streamsize>(size));
    try {
        const std::vector<uint8_t> bytes = data::read_maybe_gzip(path);
        const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
        if (!gzip) fuzz::require(bytes == std::vector<uint8_t>(data, data + size), "a plain file reads as itself");
    } catch (const std::exception& e) {
        fuzz::require_named(e);
    }
    unlink(path.c_str());
    return 0;
}
