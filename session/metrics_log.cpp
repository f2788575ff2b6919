#include "session/metrics_log.h"

#include <cstdio>

#include "session/training_session.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nn/atomic_file.h"

namespace rudra::session {

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd_ < 0) throw nn::WriteError(path + ": cannot open the metrics file for writing: " + std::strerror(errno));
}

MetricsLog::~MetricsLog() {
    if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const nlohmann::ordered_json& event) {
    const std::string line = event.dump() + "\n";
    // One write per line where the kernel takes it whole, so that readers (and a kill) see whole lines.
    for (size_t done = 0; done < line.size();) {
        const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw nn::WriteError(path_ + ": cannot write a metrics line: " +
                                 (n == 0 ? std::string("nothing written") : std::string(std::strerror(errno))));
        done += static_cast<size_t>(n);
    }
}

void add_accuracies(nlohmann::ordered_json& line, const EvalResult& r) {
    if (r.top5 >= 0) line["test_top5"] = r.top5;
    if (r.layers.empty()) return;
    nlohmann::ordered_json layers = nlohmann::ordered_json::object();
    for (const auto& l : r.layers) layers[l.name] = l.accuracy;
    line["accuracy_layers"] = layers;
}

std::string top5_text(const EvalResult& r) {
    if (r.top5 < 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "  top5 %.4f", r.top5);
    return buf;
}

}  // namespace rudra::session
