#include "tools/bench_problems.h"

#include <stdexcept>

#include "nn/prototxt.h"

namespace rudra::tools {

std::vector<BenchProblem> read_batch_file(const std::string& path) {
    const std::string text = nn::read_text_file(path);
    std::vector<BenchProblem> out;
    size_t line_no = 0, at = 0;
    while (at <= text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        ++line_no;
        at = end + 1;
        if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
        if (b == std::string::npos) continue;
        try {
            out.push_back(parse_problem(line.substr(b, e - b + 1)));
        } catch (const std::invalid_argument& err) {
            throw std::runtime_error(path + ":" + std::to_string(line_no) + ": " + err.what());
        }
    }
    if (out.empty()) throw std::runtime_error(path + ": no problems in the file");
    return out;
}

}  // namespace rudra::tools
