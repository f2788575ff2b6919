#include "nn/field_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "nn/config_error.h"

namespace rudra::nn {

FieldReader::FieldReader(const TextMessage& msg, std::string file, std::string what)
    : msg_(msg), file_(std::move(file)), what_(std::move(what)), used_(msg.fields.size(), false) {}

bool FieldReader::has(const std::string& key) const { return field(key) != nullptr; }

const TextField* FieldReader::field(const std::string& key) const {
    for (const auto& f : msg_.fields)
        if (f.name == key) return &f;
    return nullptr;
}

void FieldReader::fail(const TextField& f, const std::string& problem) const {
    throw ConfigError(file_, f.line, f.col, what_ + ": " + problem);
}

void FieldReader::fail(const std::string& problem) const {
    throw ConfigError(file_ + ": " + what_ + ": " + problem);
}

std::vector<const TextField*> FieldReader::take(const std::string& key) {
    std::vector<const TextField*> out;
    for (size_t i = 0; i < msg_.fields.size(); ++i)
        if (msg_.fields[i].name == key) {
            used_[i] = true;
            out.push_back(&msg_.fields[i]);
        }
    return out;
}

const TextField* FieldReader::take_single(const std::string& key) {
    auto all = take(key);
    if (all.empty()) return nullptr;
    if (all.size() > 1) fail(*all[1], "field '" + key + "' given more than once");
    return all[0];
}

double FieldReader::to_number(const TextField& f) const {
    if (f.kind == TextField::Kind::Identifier) {
        std::string t = f.text;
        std::transform(t.begin(), t.end(), t.begin(), ::tolower);
        if (t == "inf" || t == "infinity") return INFINITY;
        if (t == "nan") return NAN;
    }
    if (f.kind != TextField::Kind::Number) fail(f, "field '" + f.name + "' needs a number, got '" + f.text + "'");
    std::string t = f.text;
    if (!t.empty() && (t.back() == 'f' || t.back() == 'F') && t.find_first_of("xX") == std::string::npos)
        t.pop_back();
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || errno == ERANGE)
        fail(f, "field '" + f.name + "': '" + f.text + "' is not a valid number");
    return v;
}

double FieldReader::number(const std::string& key, double dflt, double lo, double hi) {
    const TextField* f = take_single(key);
    if (!f) return dflt;
    double v = to_number(*f);
    if (!(v >= lo && v <= hi))
        fail(*f, "field '" + key + "' = " + f->text + " is out of range [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    return v;
}

long long FieldReader::integer(const std::string& key, long long dflt, long long lo, long long hi) {
    const TextField* f = take_single(key);
    if (!f) return dflt;
    double v = to_number(*f);
    if (std::floor(v) != v) fail(*f, "field '" + key + "' needs an integer, got '" + f->text + "'");
    if (v < static_cast<double>(lo) || v > static_cast<double>(hi))
        fail(*f, "field '" + key + "' = " + f->text + " is out of range [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    return static_cast<long long>(v);
}

bool FieldReader::boolean(const std::string& key, bool dflt) {
    const TextField* f = take_single(key);
    if (!f) return dflt;
    const std::string& t = f->text;
    if (f->kind == TextField::Kind::Identifier || f->kind == TextField::Kind::Number) {
        if (t == "true" || t == "True" || t == "t" || t == "1") return true;
        if (t == "false" || t == "False" || t == "f" || t == "0") return false;
    }
    fail(*f, "field '" + key + "' needs true or false, got '" + t + "'");
}

std::string FieldReader::string(const std::string& key, const std::string& dflt) {
    const TextField* f = take_single(key);
    if (!f) return dflt;
    if (f->kind != TextField::Kind::String) fail(*f, "field '" + key + "' needs a quoted string");
    return f->text;
}

std::string FieldReader::enumeration(const std::string& key, const std::string& dflt,
                                     const std::vector<std::string>& allowed) {
    const TextField* f = take_single(key);
    if (!f) return dflt;
    if (f->kind != TextField::Kind::Identifier && f->kind != TextField::Kind::String)
        fail(*f, "field '" + key + "' needs one of the names listed below");
    if (std::find(allowed.begin(), allowed.end(), f->text) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(*f, "field '" + key + "': unknown value '" + f->text + "' (expected " + list + ")");
    }
    return f->text;
}

std::vector<double> FieldReader::numbers(const std::string& key, double lo, double hi) {
    std::vector<double> out;
    for (const TextField* f : take(key)) {
        double v = to_number(*f);
        if (!(v >= lo && v <= hi)) fail(*f, "field '" + key + "' = " + f->text + " is out of range");
        out.push_back(v);
    }
    return out;
}

std::vector<long long> FieldReader::integers(const std::string& key, long long lo, long long hi) {
    std::vector<long long> out;
    for (const TextField* f : take(key)) {
        double v = to_number(*f);
        if (std::floor(v) != v || v < static_cast<double>(lo) || v > static_cast<double>(hi))
            fail(*f, "field '" + key + "' = " + f->text + " must be an integer in [" + std::to_string(lo) +
                         ", " + std::to_string(hi) + "]");
        out.push_back(static_cast<long long>(v));
    }
    return out;
}

std::vector<std::string> FieldReader::strings(const std::string& key) {
    std::vector<std::string> out;
    for (const TextField* f : take(key)) {
        if (f->kind != TextField::Kind::String) fail(*f, "field '" + key + "' needs a quoted string");
        out.push_back(f->text);
    }
    return out;
}

const TextMessage* FieldReader::message(const std::string& key) {
    const TextField* f = take_single(key);
    if (!f) return nullptr;
    if (f->kind != TextField::Kind::Message) fail(*f, "field '" + key + "' needs a { ... } block");
    return &f->message;
}

std::vector<const TextField*> FieldReader::messages(const std::string& key) {
    auto all = take(key);
    for (const TextField* f : all)
        if (f->kind != TextField::Kind::Message) fail(*f, "field '" + key + "' needs a { ... } block");
    return all;
}

void FieldReader::ignore(const std::string& key, const std::string& reason,
                         std::vector<std::string>& notes) {
    for (const TextField* f : take(key))
        notes.push_back(file_ + ":" + std::to_string(f->line) + ": " + what_ + ": field '" + key +
                        "' ignored (" + reason + ")");
}

void FieldReader::finish() const {
    for (size_t i = 0; i < msg_.fields.size(); ++i)
        if (!used_[i]) fail(msg_.fields[i], "unknown field '" + msg_.fields[i].name + "'");
    for (const auto& key : required_)
        if (!has(key)) fail("missing '" + key + "'");
}

}  // namespace rudra::nn
