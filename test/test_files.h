// Writes small data files in the exact published formats, for reader tests.
#pragma once
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rudra::test {

// A fresh folder for one test's files, removed with everything in it when the test ends.
class TempDir {
public:
    explicit TempDir(const std::string& name)
        : path_((std::filesystem::temp_directory_path() / ("rudra-test-" + name + "-" + std::to_string(::getpid())))
                    .string()) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& str() const { return path_; }
    std::filesystem::path path() const { return path_; }

private:
    std::string path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b, bool gzip = false) {
    if (gzip) {
        gzFile f = gzopen(path.c_str(), "wb");
        gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
        gzclose(f);
        return;
    }
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline void put_be32(std::vector<uint8_t>& b, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// IDX image file: n images of h x w; pixel (i, y, x) = (i + y * w + x) mod 256.
inline std::vector<uint8_t> idx_images(uint32_t n, uint32_t h, uint32_t w) {
    std::vector<uint8_t> b = {0, 0, 8, 3};
    put_be32(b, n);
    put_be32(b, h);
    put_be32(b, w);
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t p = 0; p < h * w; ++p) b.push_back(static_cast<uint8_t>(i + p));
    return b;
}

// IDX label file: label i = i mod classes.
inline std::vector<uint8_t> idx_labels(uint32_t n, uint32_t classes = 10) {
    std::vector<uint8_t> b = {0, 0, 8, 1};
    put_be32(b, n);
    for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i % classes));
    return b;
}

// CIFAR-10 binary records: label i mod 10, pixels (i + p) mod 256.
inline std::vector<uint8_t> cifar_records(uint32_t n) {
    std::vector<uint8_t> b;
    for (uint32_t i = 0; i < n; ++i) {
        b.push_back(static_cast<uint8_t>(i % 10));
        for (uint32_t p = 0; p < 3072; ++p) b.push_back(static_cast<uint8_t>(i + p));
    }
    return b;
}

}  // namespace rudra::test
