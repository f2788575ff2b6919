#include "dist/ps/schedule_record.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "nn/atomic_file.h"

namespace rudra::dist {

namespace {
constexpr const char* kFormat = "rudra-schedule";
constexpr int kVersion = 1;
}  // namespace

std::string schedule_path(const std::string& output_dir) {
    return (std::filesystem::path(output_dir) / "schedule.txt").string();
}

void ScheduleRecord::gradient(int learner, int64_t version, double time_s) {
    if (learner < 0 || learner >= learners())
        throw std::logic_error("schedule: learner " + std::to_string(learner) + " out of range");
    events_.push_back(
        {ScheduleEvent::Kind::Gradient, learner, positions_[static_cast<size_t>(learner)]++, version, time_s});
}

size_t ScheduleRecord::gradients() const {
    size_t n = 0;
    for (const ScheduleEvent& e : events_) n += e.kind == ScheduleEvent::Kind::Gradient;
    return n;
}

void ScheduleRecord::write(const std::string& path, const nlohmann::ordered_json& header) const {
    nlohmann::ordered_json head = {{"format", kFormat}, {"version", kVersion}, {"learners", learners()},
                                   {"events", events_.size()}};
    for (const auto& [key, value] : header.items()) head[key] = value;
    std::string text = head.dump() + "\n";
    text.reserve(text.size() + events_.size() * 16);
    for (const ScheduleEvent& e : events_) {
        switch (e.kind) {
            case ScheduleEvent::Kind::Gradient:
                text += "g " + std::to_string(e.learner) + " " + std::to_string(e.position) + " " +
                        std::to_string(e.version);
                if (e.time_s >= 0) {
                    char t[32];
                    std::snprintf(t, sizeof t, " %.6f", e.time_s);
                    text += t;
                }
                text += "\n";
                break;
            case ScheduleEvent::Kind::Live: text += "live " + std::to_string(e.learner) + "\n"; break;
            case ScheduleEvent::Kind::Check: text += "check\n"; break;
            case ScheduleEvent::Kind::Sum: text += "sum " + std::to_string(e.learner) + "\n"; break;
        }
    }
    nn::write_file_atomically(path, text);
}

ScheduleRecord::Read ScheduleRecord::read(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open the schedule record");
    std::string line;
    const auto bad = [&](int64_t n, const std::string& why) {
        return std::runtime_error(path + ":" + std::to_string(n) + ": " + why);
    };
    if (!std::getline(in, line)) throw bad(1, "empty: not a schedule record");
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
        throw bad(1, "not a schedule record (its first line is not JSON)");
    }
    if (!header.is_object() || header.value("format", std::string()) != kFormat)
        throw bad(1, "not a schedule record (no \"format\":\"" + std::string(kFormat) + "\")");
    if (header.value("version", 0) != kVersion)
        throw bad(1, "schedule format version " + header.value("version", nlohmann::json()).dump() + ", this build reads " +
                         std::to_string(kVersion));
    const auto& learners = header.value("learners", nlohmann::json());
    const auto& events = header.value("events", nlohmann::json());
    if (!learners.is_number_unsigned() || learners.get<uint64_t>() < 1 || learners.get<uint64_t>() > 1000000 ||
        !events.is_number_unsigned())
        throw bad(1, "the header's \"learners\" and \"events\" must be positive integers");
    Read r{header, ScheduleRecord(learners.get<int>())};
    int64_t n = 1;
    int64_t sum_left = 0, sum_line = 0;  // gradient lines still to come in the open sum, and its line
    while (std::getline(in, line)) {
        ++n;
        std::istringstream fields(line);
        std::string kind, rest;
        fields >> kind;
        if (kind != "g" && sum_left > 0)
            throw bad(n, "'" + kind + "' inside the sum of line " + std::to_string(sum_line) + ", whose " +
                             std::to_string(sum_left) + " more gradient line(s) must come first");
        if (kind == "g") {
            if (sum_left > 0) --sum_left;
            int64_t learner = -1, position = -1, version = -1;
            double time_s = -1.0;
            if (!(fields >> learner >> position >> version))
                throw bad(n, "'" + line + "' is not \"g LEARNER POSITION VERSION [SECONDS]\"");
            if (fields >> rest) {
                char* end = nullptr;
                time_s = std::strtod(rest.c_str(), &end);
                if (*end != '\0' || !(time_s >= 0) || (fields >> rest))
                    throw bad(n, "'" + line + "' is not \"g LEARNER POSITION VERSION [SECONDS]\"");
            }
            if (learner < 0 || learner >= r.record.learners())
                throw bad(n, "learner " + std::to_string(learner) + " is not one of the " +
                                 std::to_string(r.record.learners()));
            const int64_t expected = r.record.positions_[static_cast<size_t>(learner)];
            if (position != expected)
                throw bad(n, "learner " + std::to_string(learner) + "'s gradient at position " + std::to_string(position) +
                                 " where its next is " + std::to_string(expected));
            if (version < 0) throw bad(n, "weights version " + std::to_string(version));
            r.record.gradient(static_cast<int>(learner), version, time_s);
        } else if (kind == "live") {
            int64_t live = -1;
            if (!(fields >> live) || (fields >> rest) || live < 1 || live > r.record.learners())
                throw bad(n, "'" + line + "' is not \"live N\" with N from 1 to the learners");
            r.record.live_learners(static_cast<int>(live));
        } else if (kind == "check" && !(fields >> rest)) {
            r.record.check();
        } else if (kind == "sum") {
            int64_t count = -1;
            if (!(fields >> count) || (fields >> rest) || count < 1 || count > 1000000)
                throw bad(n, "'" + line + "' is not \"sum N\" with N of at least 1");
            r.record.sum(static_cast<int>(count));
            sum_left = count;
            sum_line = n;
        } else {
            throw bad(n, "'" + line +
                             "' is none of \"g LEARNER POSITION VERSION [SECONDS]\", \"live N\", \"check\", \"sum N\"");
        }
    }
    if (sum_left > 0 && r.record.events().size() == events.get<uint64_t>())
        throw bad(n, "the record ends inside the sum of line " + std::to_string(sum_line) + ", " +
                         std::to_string(sum_left) + " gradient line(s) short");
    if (r.record.events().size() != events.get<uint64_t>())
        throw bad(n, "the record ends after " + std::to_string(r.record.events().size()) + " of its " +
                         std::to_string(events.get<uint64_t>()) + " lines: cut short or altered");
    return r;
}

}  // namespace rudra::dist
