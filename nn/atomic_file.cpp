#include "nn/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace rudra::nn {
namespace {

std::string error_text() { return std::strerror(errno); }

std::string folder_of(const std::string& path) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    return dir.empty() ? "." : dir;
}

// fsync of the directory that holds `path`, so that a rename in it is durable.
void sync_directory(const std::string& path) {
    const int fd = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;  // not fatal: the file itself is complete
    ::fsync(fd);
    ::close(fd);
}

// A new file, never one that exists and never through a link planted under its name. A file
// already there is a writer's leftover (the folder belongs to one run): it is removed (a link
// itself, not what it points to) and the file created once more.
int create_exclusively(const std::string& tmp) {
    constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::open(tmp.c_str(), kFlags, 0644);
    if (fd < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0) fd = ::open(tmp.c_str(), kFlags, 0644);
    if (fd < 0) throw WriteError(tmp + ": cannot create: " + error_text());
    return fd;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
    const std::string tmp = path + ".tmp";
    const int fd = create_exclusively(tmp);
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const std::string why = n == 0 ? std::string("nothing written") : error_text();
            ::close(fd);
            ::unlink(tmp.c_str());
            throw WriteError(tmp + ": write failed after " + std::to_string(done) + " of " +
                             std::to_string(bytes.size()) + " bytes: " + why);
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const std::string why = error_text();
        ::unlink(tmp.c_str());
        throw WriteError(tmp + ": cannot flush to disk: " + why);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = error_text();
        ::unlink(tmp.c_str());
        throw WriteError(path + ": cannot rename " + tmp + " into place: " + why);
    }
    sync_directory(path);
}

bool remove_stale_tmp(const std::string& path) { return ::unlink((path + ".tmp").c_str()) == 0; }

void check_can_write(const std::string& path, const std::string& what) {
    const std::string dir = folder_of(path);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw WriteError(path + ": " + what + " cannot be written: the folder " + dir + " does not exist");
    const std::string probe = dir + "/.rudra-probe-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        throw WriteError(path + ": " + what + " cannot be written: cannot create a file in " + dir + ": " + error_text());
    ::close(fd);
    ::unlink(probe.c_str());
}

}  // namespace rudra::nn
