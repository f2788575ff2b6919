// Records that `--bad-image skip` skipped, counted and kept for the log (never skipped
// silently). Safe to use from the decode threads.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rudra::data {

class SkipLog {
public:
    void record(const std::string& what) {
        std::lock_guard<std::mutex> lock(mu_);
        ++count_;
        if (kept_ < kKeep) {
            fresh_.push_back(what);
            ++kept_;
        }
    }
    int64_t count() const {
        std::lock_guard<std::mutex> lock(mu_);
        return count_;
    }
    // The messages recorded since the last call (the first kKeep of the run in all).
    std::vector<std::string> take_fresh() {
        std::lock_guard<std::mutex> lock(mu_);
        std::vector<std::string> out;
        out.swap(fresh_);
        return out;
    }
    static constexpr int kKeep = 20;

private:
    mutable std::mutex mu_;
    int64_t count_ = 0;
    int kept_ = 0;
    std::vector<std::string> fresh_;
};

}  // namespace rudra::data
