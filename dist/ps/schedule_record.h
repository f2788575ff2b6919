// The schedule of a parameter server's run: every call that fed its update rule, in order (which
// learner's gradient, from which place in that learner's sample stream, computed on which
// version of the weights; a change in the live learners; a check for a complete update). The
// rule's arithmetic depends on nothing else, so replaying the calls with the same gradients
// gives the same weights, bit for bit (`rudra dist --replay`, dist/run/replay.cpp).
//
// File: a first line of JSON (the run's settings, what its learners computed with), then one
// line per call: "g LEARNER POSITION VERSION [SECONDS]", "live N", "check", "sum N". Written
// whole or not at all. SECONDS, when there, is when the PS took the gradient: a virtual cluster's
// simulated time (bench/simulate/virtual_cluster.py writes such records; a real run's PS writes
// none). "sum N": the next N gradient lines are one leaf PS's relayed sum (Rudra-adv and adv*),
// added in the order listed and given to the rule as one bundle; only a virtual cluster's
// record has them (a real leaf PS adds in an order the root does not see).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rudra::dist {

struct ScheduleEvent {
    enum class Kind { Gradient, Live, Check, Sum };
    Kind kind = Kind::Gradient;
    int learner = 0;        // Gradient: the learner's index; Live: the learners still live; Sum: its gradients
    int64_t position = 0;   // Gradient: that learner's gradients before this one
    int64_t version = 0;    // Gradient: the timestamp of the weights it was computed on
    double time_s = -1.0;   // Gradient: when the PS took it (simulated time), -1: not recorded
};

class ScheduleRecord {
public:
    explicit ScheduleRecord(int learners) : positions_(static_cast<size_t>(learners), 0) {}

    void gradient(int learner, int64_t version, double time_s = -1.0);
    void live_learners(int live) { events_.push_back({ScheduleEvent::Kind::Live, live, 0, 0, -1.0}); }
    void check() { events_.push_back({ScheduleEvent::Kind::Check, 0, 0, 0, -1.0}); }
    // The next `count` gradients are one relayed sum.
    void sum(int count) { events_.push_back({ScheduleEvent::Kind::Sum, count, 0, 0, -1.0}); }
    const std::vector<ScheduleEvent>& events() const { return events_; }
    int learners() const { return static_cast<int>(positions_.size()); }
    size_t gradients() const;

    // Throws nn::WriteError naming the file.
    void write(const std::string& path, const nlohmann::ordered_json& header) const;

    struct Read;
    // Throws std::runtime_error naming the file, the line and the problem: not a schedule, a
    // malformed line, a learner out of range, a position out of its learner's order, a sum
    // whose gradient lines do not follow it, a file cut short (the header counts the lines).
    static Read read(const std::string& path);

private:
    std::vector<int64_t> positions_;
    std::vector<ScheduleEvent> events_;
};

struct ScheduleRecord::Read {
    nlohmann::json header;
    ScheduleRecord record;
};

// OUTDIR/schedule.txt
std::string schedule_path(const std::string& output_dir);

}  // namespace rudra::dist
