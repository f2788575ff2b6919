// JSON-lines metrics: one object per line, flushed as written, so a crash loses nothing logged.
#pragma once
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace rudra::tools {

class MetricsLog {
public:
    // append: continue an existing log (a resumed run) instead of starting a new one.
    MetricsLog(const std::string& path, bool append);
    void write(const nlohmann::json& event);
    // A line that is already one JSON object (from a part that does not use nlohmann-json).
    void write_line(const std::string& json_line);
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::ofstream out_;
};

}  // namespace rudra::tools
