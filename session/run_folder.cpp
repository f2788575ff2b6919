#include "session/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include "base/clock.h"
#include "nn/atomic_file.h"

namespace rudra::session {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_run_file(const std::string& name) {
    return name == "metrics.jsonl" || name == "staleness.json" || name == "gossip-peers" || name == "timeline-parts" ||
           name == "schedule.txt" || name == "schedule.txt.tmp" || name == "replay" ||
           ends_with(name, ".rudra") || ends_with(name, ".rudra.tmp");
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

std::string holder_line() {
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    return "pid " + std::to_string(getpid()) + " on " + host + " since " + utc_now() + "\n";
}

}  // namespace

std::vector<std::string> RunFolder::run_files(const std::string& dir) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (is_run_file(name)) found.push_back(name);
    }
    std::sort(found.begin(), found.end());
    return found;
}

RunFolder::RunFolder(std::string dir, Start start, const std::string& resume_hint) : dir_(std::move(dir)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw nn::WriteError(dir_ + ": cannot create the output folder: " + ec.message());
    const std::string lock_path = (fs::path(dir_) / ".rudra-lock").string();
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (lock_fd_ < 0)
        throw nn::WriteError(dir_ + ": the output folder cannot be written (creating " + lock_path +
                             "): " + std::strerror(errno));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        const int why = errno;
        char holder[512] = {0};
        const ssize_t n = ::pread(lock_fd_, holder, sizeof holder - 1, 0);
        std::string who = n > 0 ? std::string(holder, static_cast<size_t>(n)) : std::string();
        while (!who.empty() && (who.back() == '\n' || who.back() == '\r')) who.pop_back();
        ::close(lock_fd_);
        lock_fd_ = -1;
        if (why == EWOULDBLOCK)
            throw std::runtime_error(dir_ + ": the output folder is in use by another live run" +
                                     (who.empty() ? std::string() : " (" + who + ")") +
                                     ": give this run another -o, or wait for that one to end");
        throw nn::WriteError(lock_path + ": cannot lock: " + std::strerror(why));
    }
    const std::string line = holder_line();
    if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, line.data(), line.size(), 0) < 0) {
        // Who holds the lock is for the refusal's message only: the lock itself is taken.
    }
    const std::vector<std::string> found = run_files(dir_);
    if (found.empty() || start == Start::Resume) return;
    if (start == Start::Fresh) {
        ::close(lock_fd_);
        lock_fd_ = -1;
        throw std::runtime_error(dir_ + ": the output folder holds another run's files (" + joined(found) +
                                 "); a new run does not replace them. " +
                                 (resume_hint.empty() ? std::string("Replace it")
                                                      : "Go on with that run (" + resume_hint + "), replace it") +
                                 " (--overwrite), or give this run another -o");
    }
    for (const auto& name : found) {
        fs::remove_all(fs::path(dir_) / name, ec);
        if (ec) throw nn::WriteError((fs::path(dir_) / name).string() + ": cannot remove it (--overwrite): " + ec.message());
    }
}

RunFolder::~RunFolder() {
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

}  // namespace rudra::session
