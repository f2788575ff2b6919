// JSON-lines metrics: one object per line, written as it comes, so a crash loses nothing logged.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace rudra::session {

class MetricsLog {
public:
    // append: continue an existing log (a resumed run) instead of starting a new one. The file is
    // never opened through a symbolic link. Throws nn::WriteError naming the file.
    MetricsLog(const std::string& path, bool append);
    ~MetricsLog();
    MetricsLog(const MetricsLog&) = delete;
    MetricsLog& operator=(const MetricsLog&) = delete;
    // Keys in the order they are given ("event" first). Throws nn::WriteError (disk full...).
    void write(const nlohmann::ordered_json& event);
    const std::string& path() const { return path_; }

private:
    std::string path_;
    int fd_ = -1;
};

struct EvalResult;
// An evaluation's top-5 accuracy ("test_top5", where the net has 5 or more classes) and its
// Accuracy layers' ("accuracy_layers": {top name: accuracy}) added to a metrics line.
void add_accuracies(nlohmann::ordered_json& line, const EvalResult& r);
// "  top5 0.9123" for the readable lines ("" without a top-5).
std::string top5_text(const EvalResult& r);

}  // namespace rudra::session
