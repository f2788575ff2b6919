// Sizes that come from input (file headers, prototxt fields, options, messages) computed in
// arithmetic that reports overflow instead of wrapping: a product that wraps to a small number
// passes every later check and ends far from its cause (a bad_alloc, a vector's max_size, a read
// past a buffer). Each error names what was being sized and the values.
#pragma once
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace rudra {

class SizeOverflow : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// a * b, or SizeOverflow "WHAT: A x B does not fit in N bits".
template <class T>
T checked_mul(T a, T b, const std::string& what) {
    static_assert(std::is_integral_v<T>);
    T r;
    if (__builtin_mul_overflow(a, b, &r))
        throw SizeOverflow(what + ": " + std::to_string(a) + " x " + std::to_string(b) + " does not fit in " +
                           std::to_string(std::numeric_limits<T>::digits) + " bits");
    return r;
}

// a + b, or SizeOverflow.
template <class T>
T checked_add(T a, T b, const std::string& what) {
    static_assert(std::is_integral_v<T>);
    T r;
    if (__builtin_add_overflow(a, b, &r))
        throw SizeOverflow(what + ": " + std::to_string(a) + " + " + std::to_string(b) + " does not fit in " +
                           std::to_string(std::numeric_limits<T>::digits) + " bits");
    return r;
}

// `v` as a To, or SizeOverflow when it does not fit.
template <class To, class From>
To checked_cast(From v, const std::string& what) {
    static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
    To r;
    if (__builtin_add_overflow(v, From{0}, &r))
        throw SizeOverflow(what + ": " + std::to_string(v) + " is out of range (" +
                           std::to_string(std::numeric_limits<To>::min()) + " to " +
                           std::to_string(std::numeric_limits<To>::max()) + ")");
    return r;
}

}  // namespace rudra
