// Strict, typed access to one TextMessage. Every getter marks the fields it read; finish()
// rejects whatever is left, naming the file, line and field. Values are range-checked.
#pragma once
#include <limits>
#include <string>
#include <vector>

#include "nn/prototxt.h"

namespace rudra::nn {

class FieldReader {
public:
    // `what` names the message in errors, e.g. "layer 'conv1' (Convolution)".
    FieldReader(const TextMessage& msg, std::string file, std::string what);

    bool has(const std::string& key) const;

    double number(const std::string& key, double dflt, double lo = -std::numeric_limits<double>::max(),
                  double hi = std::numeric_limits<double>::max());
    long long integer(const std::string& key, long long dflt, long long lo, long long hi);
    bool boolean(const std::string& key, bool dflt);
    std::string string(const std::string& key, const std::string& dflt);
    // An enum given as a bare identifier (a quoted string is also taken); must be in `allowed`.
    std::string enumeration(const std::string& key, const std::string& dflt,
                            const std::vector<std::string>& allowed);

    std::vector<double> numbers(const std::string& key, double lo, double hi);
    std::vector<long long> integers(const std::string& key, long long lo, long long hi);
    std::vector<std::string> strings(const std::string& key);
    const TextMessage* message(const std::string& key);  // null when absent
    std::vector<const TextField*> messages(const std::string& key);

    // Marks a field as read elsewhere (e.g. the generic layer fields the net already parsed).
    void accept(const std::string& key) { take(key); }
    // Accepts a field this program does not need, and records why in `notes`.
    void ignore(const std::string& key, const std::string& reason, std::vector<std::string>& notes);
    // Records that `key` must be present; checked by finish() after the unknown fields, so that a
    // misspelt name is reported as such rather than as a missing one.
    void require(const std::string& key) { required_.push_back(key); }
    // Errors on the first field nobody read, then on the first required field that is absent.
    void finish() const;

    const TextField* field(const std::string& key) const;  // first occurrence, not marked
    [[noreturn]] void fail(const TextField& f, const std::string& problem) const;
    [[noreturn]] void fail(const std::string& problem) const;  // at the message itself
    const std::string& file() const { return file_; }
    const std::string& what() const { return what_; }

private:
    const TextMessage& msg_;
    std::string file_, what_;
    mutable std::vector<bool> used_;
    std::vector<std::string> required_;

    std::vector<const TextField*> take(const std::string& key);
    const TextField* take_single(const std::string& key);
    double to_number(const TextField& f) const;
};

}  // namespace rudra::nn
