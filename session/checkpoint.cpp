#include "session/checkpoint.h"

#include "base/clock.h"

#include <stdexcept>
#include <utility>

namespace rudra::session {

namespace {

// The metadata of a snapshot written before checkpoints carried it: one learner at the
// snapshot's iteration and position.
nlohmann::json plain_snapshot_meta(const nn::Snapshot& s) {
    const auto iteration = static_cast<int64_t>(s.iteration);
    return {{"format", "rudra checkpoint"},
            {"protocol", kSingleNode},
            {"reason", "snapshot"},
            {"epoch", 0},
            {"settings", {{"learners", 1}}},
            {"rule", {{"timestamp", iteration}, {"samples", static_cast<int64_t>(s.samples_seen)}, {"applied", {iteration}}}}};
}

void check_meta(const Checkpoint& ck) {
    const nlohmann::json& meta = ck.meta;
    const std::string format = meta.is_object() ? meta.value("format", std::string()) : std::string();
    // "rudra dist checkpoint": the name before train and dist shared the format.
    if (format != "rudra checkpoint" && format != "rudra dist checkpoint")
        throw std::runtime_error("not a rudra checkpoint's metadata");
    for (const auto* field : {&meta.at("epoch"), &meta.at("rule").at("samples"), &meta.at("settings").at("learners")})
        if (!field->is_number_integer()) throw std::runtime_error(field->dump() + " where an integer belongs");
    if (meta.contains("elapsed_s") && !meta.at("elapsed_s").is_number())
        throw std::runtime_error("'elapsed_s' is not a number");
    if (ck.epoch() < 0 || ck.samples() < 0 || !(ck.elapsed_s() >= 0) || ck.learners() < 1)
        throw std::runtime_error("a negative epoch, sample count or time, or no learner");
    for (const auto& a : meta.at("rule").at("applied"))
        if (!a.is_number_integer() || a.get<int64_t>() < 0) throw std::runtime_error("a learner's count of gradients is " + a.dump());
    if (!meta.at("settings").is_object()) throw std::runtime_error("'settings' is not an object");
    for (const char* text : {"reason", "written_at", "protocol"})
        if (meta.contains(text) && !meta[text].is_string()) throw std::runtime_error(std::string("'") + text + "' is not text");
    if (meta.at("rule").contains("timestamp") && !meta.at("rule").at("timestamp").is_number_integer())
        throw std::runtime_error("'timestamp' is not an integer");
}

}  // namespace

std::string checkpoint_metadata(const CheckpointFacts& f) {
    nlohmann::ordered_json meta{{"format", "rudra checkpoint"}, {"reason", f.reason}};
    if (f.timed) meta["written_at"] = utc_now();
    meta["epoch"] = f.epoch;
    if (f.timed) meta["elapsed_s"] = f.elapsed_s;
    meta["protocol"] = f.method;
    meta["settings"] = f.settings;
    meta["rule"] = f.rule;
    if (!f.state.is_null()) meta["state"] = f.state;
    return meta.dump();
}

int64_t Checkpoint::applied(int index) const {
    const auto& a = meta.at("rule").at("applied");
    return index >= 0 && static_cast<size_t>(index) < a.size() ? a[static_cast<size_t>(index)].get<int64_t>() : 0;
}

namespace {

Checkpoint from_snapshot(nn::Snapshot snapshot, const std::string& path, const std::function<void(const Checkpoint&)>& check_rule) {
    Checkpoint ck;
    ck.path = path;
    ck.snapshot = std::move(snapshot);
    try {
        ck.plain = ck.snapshot.metadata.empty();
        ck.meta = ck.plain ? plain_snapshot_meta(ck.snapshot) : nlohmann::json::parse(ck.snapshot.metadata);
        check_meta(ck);
    } catch (const std::exception& e) {
        throw std::runtime_error(ck.path + ": checkpoint metadata unusable: " + e.what());
    }
    try {
        if (check_rule) check_rule(ck);
    } catch (const std::exception& e) {
        throw std::runtime_error(ck.path + ": " + e.what());
    }
    return ck;
}

}  // namespace

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& path,
                            const std::function<void(const Checkpoint&)>& check_rule) {
    return from_snapshot(nn::parse_snapshot(bytes, path), path, check_rule);
}

Checkpoint read_checkpoint(const std::string& path, const std::function<void(const Checkpoint&)>& check_rule) {
    return from_snapshot(nn::read_snapshot(path), path, check_rule);
}

}  // namespace rudra::session
