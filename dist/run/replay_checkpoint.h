// What a replay (dist/run/replay.cpp) keeps in its checkpoint besides the PS's weights, history
// and rule: its place in the record, and the weights versions that gradients still to come were
// computed on, in OUT/replay-versions-EVENT.rudra (a snapshot file of their own, with a checksum).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/ps/schedule_record.h"
#include "dist/run/checkpoint.h"

namespace rudra::dist::run {

using WeightsVersions = std::map<int64_t, std::vector<float>>;  // by timestamp

// A hash of the record's first n events: the record a checkpoint was taken on (a record that grew
// since, its run having gone on, still matches).
std::string events_hash(const std::vector<ScheduleEvent>& events, size_t n);

// "replay-versions-EVENT.rudra": the file of the versions kept at event `event`.
std::string versions_file_name(size_t event);
// Writes `versions` (kept at event `event`) to `path`, whole or not at all.
void write_versions(const std::string& path, const WeightsVersions& versions, size_t event);
// Removes the versions files in `dir` but `keep` (a name; "": all).
void remove_versions_but(const std::string& dir, const std::string& keep);

// A replay's checkpoint, read back and checked against the record it goes on with.
struct ReplayResume {
    DistCheckpoint checkpoint;
    size_t event = 0;  // the next event of the record
    nlohmann::json epoch_lines;
    WeightsVersions versions;
};
// Throws naming the checkpoint and the problem: a run's checkpoint (without the versions its
// learners held), another record's, other settings, a versions file missing or corrupt.
// `floats`: the size of one version.
ReplayResume read_replay_checkpoint(const std::string& file_or_dir, const std::string& record_path,
                                    const std::vector<ScheduleEvent>& events, const nlohmann::ordered_json& settings,
                                    size_t floats);

}  // namespace rudra::dist::run
