// JSON-lines metrics: one object per line, flushed as written, so a crash loses nothing logged.
#pragma once
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace rudra::session {

class MetricsLog {
public:
    // append: continue an existing log (a resumed run) instead of starting a new one.
    MetricsLog(const std::string& path, bool append);
    // Keys in the order they are given ("event" first).
    void write(const nlohmann::ordered_json& event);
    const std::string& path() const { return path_; }

private:
    void write_line(const std::string& json_line);
    std::string path_;
    std::ofstream out_;
};

}  // namespace rudra::session
