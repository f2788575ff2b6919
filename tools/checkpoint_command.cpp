// `rudra checkpoint FILE|DIR`: where a run's checkpoint stands (a distributed run's, or a snapshot
// of `rudra train`: one format, session/checkpoint.h), as one JSON line (or one field's value),
// for people and for batch scripts that decide whether a slot made progress.
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "dist/run/checkpoint.h"

namespace rudra::tools {

int run_checkpoint(const CheckpointOptions& o) {
    const session::Checkpoint ck = dist::run::read_any_checkpoint(o.path);
    const nlohmann::ordered_json info{{"path", ck.path},
                                      {"reason", ck.meta.value("reason", std::string())},
                                      {"written_at", ck.meta.value("written_at", std::string())},
                                      {"protocol", ck.meta.value("protocol", std::string())},
                                      {"learners", ck.learners()},
                                      {"epoch", ck.epoch()},
                                      {"samples", ck.samples()},
                                      {"updates", ck.timestamp()},
                                      {"elapsed_s", ck.elapsed_s()}};
    if (o.field.empty()) {
        std::printf("%s\n", info.dump().c_str());
        return 0;
    }
    if (!info.contains(o.field))
        throw std::runtime_error("--field must be one of path, reason, written_at, protocol, learners, epoch, samples, "
                                 "updates, elapsed_s; got '" + o.field + "'");
    const auto& v = info.at(o.field);
    std::printf("%s\n", v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
    return 0;
}

}  // namespace rudra::tools
