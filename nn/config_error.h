// An error in a user's file: carries "file:line:col: problem" so that every message names the place.
#pragma once
#include <stdexcept>
#include <string>

namespace rudra::nn {

class ConfigError : public std::runtime_error {
public:
    ConfigError(const std::string& file, int line, int col, const std::string& problem)
        : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(col) +
                             ": " + problem) {}
    explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace rudra::nn
