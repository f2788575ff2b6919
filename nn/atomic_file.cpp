#include "nn/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace rudra::nn {
namespace {

std::string error_text() { return std::strerror(errno); }

// fsync of the directory that holds `path`, so that a rename in it is durable.
void sync_directory(const std::string& path) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;  // not fatal: the file itself is complete
    ::fsync(fd);
    ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error(tmp + ": cannot create: " + error_text());
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const std::string why = error_text();
            ::close(fd);
            ::unlink(tmp.c_str());
            throw std::runtime_error(tmp + ": write failed after " + std::to_string(done) + " of " +
                                     std::to_string(bytes.size()) + " bytes: " + why);
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const std::string why = error_text();
        ::unlink(tmp.c_str());
        throw std::runtime_error(tmp + ": cannot flush to disk: " + why);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = error_text();
        ::unlink(tmp.c_str());
        throw std::runtime_error(path + ": cannot rename " + tmp + " into place: " + why);
    }
    sync_directory(path);
}

bool remove_stale_tmp(const std::string& path) { return ::unlink((path + ".tmp").c_str()) == 0; }

}  // namespace rudra::nn
