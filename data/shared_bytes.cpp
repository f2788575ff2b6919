#include "data/shared_bytes.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace rudra::data {
namespace {

std::runtime_error os_error(const std::string& what, const std::string& path) {
    return std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

NodeFile::NodeFile(const std::string& dir, const std::vector<uint8_t>& bytes) {
    std::string name = dir + "/rudra-data-XXXXXX";  // mkstemp: a new name, mode 0600
    fd_ = mkostemp(name.data(), O_CLOEXEC);
    if (fd_ < 0) throw os_error("cannot create a file", name);
    path_ = name;
    const auto fail = [&](const std::string& what) {
        const std::runtime_error e = os_error(what, path_);
        remove();
        return e;
    };
    if (flock(fd_, LOCK_SH) != 0) throw fail("cannot lock");
    // Reserving the room first turns a full tmpfs into an error here, not a SIGBUS in a reader.
    if (!bytes.empty()) {
        const int rc = posix_fallocate(fd_, 0, static_cast<off_t>(bytes.size()));
        if (rc != 0) {
            errno = rc;
            throw fail("cannot reserve " + std::to_string(bytes.size()) + " bytes");
        }
    }
    for (size_t at = 0; at < bytes.size();) {
        const ssize_t n = write(fd_, bytes.data() + at, bytes.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw fail("cannot write");
        at += static_cast<size_t>(n);
    }
}

NodeFile::~NodeFile() { remove(); }

void NodeFile::remove() {
    if (!path_.empty()) unlink(path_.c_str());
    path_.clear();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
}

std::vector<std::string> remove_stale_shared_files(const std::string& dir, double min_age_s) {
    std::vector<std::string> removed;
    DIR* d = opendir(dir.c_str());
    if (!d) return removed;
    const time_t now = time(nullptr);
    while (const dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.rfind("rudra-data-", 0) != 0) continue;
        const std::string path = dir + "/" + name;
        const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        struct stat st {};
        // Only this user's plain files, old enough that their writer had time to claim them.
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            difftime(now, st.st_mtime) >= min_age_s && flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(path.c_str()) == 0)
            removed.push_back(name);
        close(fd);
    }
    closedir(d);
    return removed;
}

SharedBytes map_shared_file(const std::string& path, size_t size) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw os_error("cannot open", path);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const std::runtime_error e = os_error("cannot stat", path);
        close(fd);
        throw e;
    }
    if (static_cast<uint64_t>(st.st_size) != size) {
        close(fd);
        throw std::runtime_error(path + ": " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(size));
    }
    SharedBytes out;
    out.size = size;
    if (size == 0) {
        close(fd);
        out.keep = std::make_shared<int>(0);
        return out;
    }
    void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    const int mmap_errno = errno;
    close(fd);  // the mapping keeps the file
    if (p == MAP_FAILED) {
        errno = mmap_errno;
        throw os_error("cannot map", path);
    }
    out.data = static_cast<const uint8_t*>(p);
    out.keep = std::shared_ptr<const void>(p, [size](const void* q) { munmap(const_cast<void*>(q), size); });
    return out;
}

SharedBytes hold_bytes(std::vector<uint8_t> bytes) {
    auto held = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
    SharedBytes out;
    out.data = held->data();
    out.size = held->size();
    out.keep = std::move(held);
    return out;
}

}  // namespace rudra::data
