#include "session/metrics_log.h"

#include <stdexcept>

namespace rudra::session {

MetricsLog::MetricsLog(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
    if (!out_) throw std::runtime_error(path + ": cannot open the metrics file for writing");
}

void MetricsLog::write(const nlohmann::ordered_json& event) { write_line(event.dump()); }

void MetricsLog::write_line(const std::string& json_line) {
    out_ << json_line << '\n';
    out_.flush();
    if (!out_) throw std::runtime_error(path_ + ": write failed");
}

}  // namespace rudra::session
