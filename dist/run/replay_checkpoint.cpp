#include "dist/run/replay_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "nn/snapshot.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

// FNV-1a over the events' fields.
std::string events_hash(const std::vector<ScheduleEvent>& events, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const auto mix = [&h](int64_t v) {
        for (int b = 0; b < 8; ++b) {
            h ^= static_cast<uint64_t>(v >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    };
    for (size_t i = 0; i < n && i < events.size(); ++i) {
        const ScheduleEvent& e = events[i];
        mix(static_cast<int64_t>(e.kind));
        mix(e.learner);
        mix(e.position);
        mix(e.version);
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
    return text;
}

namespace {

constexpr const char* kVersionsPrefix = "replay-versions-";

WeightsVersions read_versions(const std::string& path, size_t event, size_t floats) {
    const nn::Snapshot snap = nn::read_snapshot(path);
    WeightsVersions versions;
    try {
        const nlohmann::json meta = nlohmann::json::parse(snap.metadata);
        if (meta.value("format", std::string()) != "rudra replay versions" || meta.at("event").get<size_t>() != event)
            throw std::runtime_error("not the versions of this checkpoint (event " + std::to_string(event) + ")");
        const auto list = meta.at("versions").get<std::vector<int64_t>>();
        if (snap.params.size() != list.size() * floats)
            throw std::runtime_error(std::to_string(snap.params.size()) + " floats for " + std::to_string(list.size()) +
                                     " versions of " + std::to_string(floats));
        for (size_t k = 0; k < list.size(); ++k)
            versions[list[k]].assign(snap.params.begin() + static_cast<std::ptrdiff_t>(k * floats),
                                     snap.params.begin() + static_cast<std::ptrdiff_t>((k + 1) * floats));
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return versions;
}

}  // namespace

std::string versions_file_name(size_t event) { return kVersionsPrefix + std::to_string(event) + ".rudra"; }

// The versions one after the other as the snapshot's parameters; their timestamps in its metadata.
void write_versions(const std::string& path, const WeightsVersions& versions, size_t event) {
    nn::Snapshot snap;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [version, weights] : versions) {
        list.push_back(version);
        snap.params.insert(snap.params.end(), weights.begin(), weights.end());
    }
    snap.metadata = nlohmann::ordered_json{{"format", "rudra replay versions"}, {"event", event}, {"versions", list}}.dump();
    nn::write_snapshot(path, snap);
}

void remove_versions_but(const std::string& dir, const std::string& keep) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kVersionsPrefix, 0) == 0 && name != keep) fs::remove(entry.path(), ec);
    }
}

ReplayResume read_replay_checkpoint(const std::string& file_or_dir, const std::string& record_path,
                                    const std::vector<ScheduleEvent>& events, const nlohmann::ordered_json& settings,
                                    size_t floats) {
    ReplayResume r{read_dist_checkpoint(file_or_dir), 0, {}, {}};
    const DistCheckpoint& ck = r.checkpoint;
    if (!ck.meta.contains("state") || !ck.meta.at("state").contains("replay"))
        throw std::runtime_error(ck.path + ": a run's checkpoint, not a replay's: it lacks the weights versions the "
                                           "run's learners were computing on, so a replay starts from the record's "
                                           "beginning (without --resume)");
    try {
        const nlohmann::json& j = ck.meta.at("state").at("replay");
        r.event = j.at("event").get<size_t>();
        if (r.event > events.size() || j.at("events_hash").get<std::string>() != events_hash(events, r.event))
            throw std::runtime_error("it was taken on another record than " + record_path + " (its first " +
                                     std::to_string(r.event) + " events differ)");
        if (ck.meta.at("settings") != nlohmann::json(settings))
            throw std::runtime_error("its settings are not the record's");
        r.epoch_lines = j.at("epoch_lines");
        const std::string versions = (fs::path(ck.path).parent_path() / j.at("versions").get<std::string>()).string();
        r.versions = read_versions(versions, r.event, floats);
    } catch (const std::exception& e) {
        throw std::runtime_error(ck.path + ": cannot go on from this checkpoint: " + e.what());
    }
    return r;
}

}  // namespace rudra::dist::run
