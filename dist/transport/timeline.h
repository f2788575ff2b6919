// `--timeline FILE`: every rank's compute, pull, push, wait and PS-update spans as a Chrome trace
// (chrome://tracing, Perfetto), as Horovod's timeline does, so that the overlap Table I sums up can
// be seen. Each rank records into its own Timeline (a mutex-guarded list of spans, a few per
// mini-batch) and writes it as a part file at its end; the first rank merges the parts.
// Off, it costs one null-pointer test per span.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"

namespace rudra::dist {

// The rows of a rank in the trace: one per thread that records.
enum class Lane : int { Main = 0, Pull = 1, Push = 2 };

class Timeline {
public:
    using Clock = std::chrono::system_clock;  // comparable across processes (and, roughly, nodes)
    // `role` names the rank's row group ("rank 2: learner").
    Timeline(int rank, std::string role, size_t max_spans = 2'000'000);
    // `peer`: the rank the span is about (a PS's reply to it, its gradient), shown as the event's
    // args; -1 for none.
    void add(const char* name, Lane lane, Clock::time_point begin, Clock::time_point end, int peer = -1);
    int64_t dropped() const;  // spans past max_spans, not kept
    // This rank's events, one JSON object per line (thread and process names first).
    std::string events_json() const;

private:
    struct Span {
        const char* name;  // a string literal
        Lane lane;
        int peer;
        int64_t begin_us, end_us;
    };
    int rank_;
    std::string role_;
    size_t max_spans_;
    mutable std::mutex mu_;
    std::vector<Span> spans_;
    int64_t dropped_ = 0;
};

// Records [construction, destruction) on `timeline` when it is not null.
class Span {
public:
    Span(Timeline* timeline, const char* name, Lane lane = Lane::Main, int peer = -1)
        : timeline_(timeline), name_(name), lane_(lane), peer_(peer) {
        if (timeline_) begin_ = Timeline::Clock::now();
    }
    ~Span() {
        if (timeline_) timeline_->add(name_, lane_, begin_, Timeline::Clock::now(), peer_);
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

private:
    Timeline* timeline_;
    const char* name_;
    Lane lane_;
    int peer_;
    Timeline::Clock::time_point begin_{};
};

// f() recorded as a span named `name`, its seconds added to `seconds`; returns what f returns.
template <class F>
auto timed(Timeline* timeline, const char* name, double& seconds, F&& f) {
    const auto t0 = SteadyClock::now();
    const Span span(timeline, name);
    auto result = f();
    seconds += seconds_since(t0);
    return result;
}

// The part file of `rank` of run `run_id`, in the run's folder of parts; and the merge of the
// run's parts (those present) into `path` as {"traceEvents": [...]}, removing them. Returns the
// number of parts merged. Parts carry the run's identity, so that a killed run's parts are never
// merged into another's.
std::string timeline_part_path(const std::string& parts_dir, const std::string& run_id, int rank);
int merge_timeline_parts(const std::string& path, const std::string& parts_dir, const std::string& run_id, int ranks);

}  // namespace rudra::dist
