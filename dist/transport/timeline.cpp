#include "dist/transport/timeline.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nn/atomic_file.h"

namespace rudra::dist {
namespace {

int64_t micros(Timeline::Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

const char* lane_name(Lane lane) {
    switch (lane) {
        case Lane::Main: return "main";
        case Lane::Pull: return "pullWeights";
        case Lane::Push: return "pushGradient";
    }
    return "?";
}

}  // namespace

Timeline::Timeline(int rank, std::string role, size_t max_spans)
    : rank_(rank), role_(std::move(role)), max_spans_(max_spans) {
    spans_.reserve(std::min<size_t>(max_spans_, 1 << 16));
}

void Timeline::add(const char* name, Lane lane, Clock::time_point begin, Clock::time_point end, int peer) {
    std::lock_guard<std::mutex> lock(mu_);
    if (spans_.size() >= max_spans_) {
        ++dropped_;
        return;
    }
    spans_.push_back(Span{name, lane, peer, micros(begin), micros(end)});
}

int64_t Timeline::dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
}

std::string Timeline::events_json() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::ostringstream out;
    out << nlohmann::json{{"name", "process_name"}, {"ph", "M"}, {"pid", rank_}, {"args", {{"name", role_}}}}.dump()
        << "\n"
        << nlohmann::json{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank_}, {"args", {{"sort_index", rank_}}}}
               .dump()
        << "\n";
    bool seen[3] = {false, false, false};
    for (const Span& s : spans_) seen[static_cast<int>(s.lane)] = true;
    for (int lane = 0; lane < 3; ++lane)
        if (seen[lane])
            out << nlohmann::json{{"name", "thread_name"},
                                  {"ph", "M"},
                                  {"pid", rank_},
                                  {"tid", lane},
                                  {"args", {{"name", lane_name(static_cast<Lane>(lane))}}}}
                       .dump()
                << "\n";
    for (const Span& s : spans_) {
        nlohmann::ordered_json e{{"name", s.name}, {"ph", "X"}, {"pid", rank_}, {"tid", static_cast<int>(s.lane)},
                                 {"ts", s.begin_us}, {"dur", s.end_us - s.begin_us}};
        if (s.peer >= 0) e["args"] = {{"peer", s.peer}};
        out << e.dump() << "\n";
    }
    if (dropped_ > 0)
        out << nlohmann::json{{"name", "spans dropped (timeline full)"}, {"ph", "i"}, {"s", "p"}, {"pid", rank_},
                              {"ts", spans_.empty() ? 0 : spans_.back().end_us}, {"args", {{"dropped", dropped_}}}}
                   .dump()
            << "\n";
    return out.str();
}

std::string timeline_part_path(const std::string& parts_dir, const std::string& run_id, int rank) {
    return parts_dir + "/" + run_id + ".rank-" + std::to_string(rank) + ".json";
}

int merge_timeline_parts(const std::string& path, const std::string& parts_dir, const std::string& run_id, int ranks) {
    std::string merged = "{\"traceEvents\":[\n";
    bool first = true;
    int parts = 0;
    for (int r = 0; r < ranks; ++r) {
        const std::string part = timeline_part_path(parts_dir, run_id, r);
        std::ifstream in(part);
        if (!in) continue;
        ++parts;
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            merged += (first ? "" : ",\n") + line;
            first = false;
        }
        in.close();
        std::remove(part.c_str());
    }
    merged += "\n],\"displayTimeUnit\":\"ms\"}\n";
    nn::write_file_atomically(path, merged);
    return parts;
}

}  // namespace rudra::dist
