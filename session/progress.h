// Progress of a long run: a redrawn bar with rate and ETA on a terminal, nothing otherwise
// (plain lines are printed by the caller at its display interval).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace rudra::session {

class ProgressBar {
public:
    explicit ProgressBar(bool enabled) : enabled_(enabled) {}
    // done/total in iterations; redraws at most ten times a second.
    void update(long done, long total, double iters_per_s, double images_per_s, double loss, int epoch);
    void clear();  // erase the bar before printing a normal line
    bool enabled() const { return enabled_; }

private:
    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

std::string format_duration(double seconds);
std::string with_thousands(uint64_t n);  // 89578 -> "89,578"

}  // namespace rudra::session
