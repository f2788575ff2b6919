// Validators for the `rudra` command line whose messages say what was wanted and what was given
// ("--batch: must be a positive integer, got 'abc'"), instead of CLI11's ranges of 309 digits.
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace rudra::tools::checks {

// An integer of up to 18 digits, at least `min`.
inline CLI::Validator integer_at_least(long long min, const std::string& what) {
    return CLI::Validator(
        [min, what](std::string& s) -> std::string {
            const bool digits = !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
            if (!digits || std::stoll(s) < min) return "must be " + what + ", got '" + s + "'";
            return "";
        },
        what);
}

inline const CLI::Validator kPositiveInteger = integer_at_least(1, "a positive integer");
inline const CLI::Validator kNonNegativeInteger = integer_at_least(0, "a non-negative integer");

// An integer in [min, max], for options held in an int or used in sizes (a value past the type
// would wrap where it is used).
inline CLI::Validator integer_in(long long min, long long max, const std::string& what) {
    return CLI::Validator(
        [min, max, what](std::string& s) -> std::string {
            const bool digits = !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
            if (!digits || std::stoll(s) < min) return "must be " + what + ", got '" + s + "'";
            if (std::stoll(s) > max) return "must be " + what + " of at most " + std::to_string(max) + ", got '" + s + "'";
            return "";
        },
        what);
}

inline const CLI::Validator kPositiveInt = integer_in(1, 2147483647, "a positive integer");
inline const CLI::Validator kNonNegativeInt = integer_in(0, 2147483647, "a non-negative integer");

// A finite number in [min, max) (max excluded when `below`), or above `min` when `above`.
inline CLI::Validator number_in(double min, double max, bool above, bool below, const std::string& what) {
    return CLI::Validator(
        [=](std::string& s) -> std::string {
            char* end = nullptr;
            errno = 0;
            const double v = std::strtod(s.c_str(), &end);
            const bool ok = !s.empty() && end && *end == '\0' && errno == 0 && std::isfinite(v) &&
                            (above ? v > min : v >= min) && (below ? v < max : v <= max);
            return ok ? "" : "must be " + what + ", got '" + s + "'";
        },
        what);
}

inline const CLI::Validator kPositiveNumber = number_in(0.0, HUGE_VAL, true, false, "a positive number");

}  // namespace rudra::tools::checks
