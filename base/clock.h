// Seconds as doubles on the steady clock: what every timed loop, trace span and deadline here
// measures in; and the wall-clock time as the logs and checkpoints write it.
#pragma once
#include <chrono>
#include <ctime>
#include <string>

namespace rudra {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

inline double seconds_since(SteadyClock::time_point t) { return seconds_between(t, SteadyClock::now()); }

// `s` seconds in the clock's own unit, for deadlines: SteadyClock::now() + clock_duration(s).
inline SteadyClock::duration clock_duration(double s) {
    return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

// Now in UTC, as "2026-12-05T17:05:54Z".
inline std::string utc_now() {
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace rudra
