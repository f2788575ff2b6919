// Seconds as doubles on the steady clock: what every timed loop, trace span and deadline here
// measures in.
#pragma once
#include <chrono>

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

}  // namespace rudra
