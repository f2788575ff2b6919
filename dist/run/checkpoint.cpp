#include "dist/run/checkpoint.h"

#include <filesystem>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "dist/ps/update_rule.h"

namespace rudra::dist::run {
namespace fs = std::filesystem;

namespace {

// A single-node run's checkpoint, or a snapshot without metadata, is refused by name; the PS
// protocols keep their update rule's whole state, checked here; all-reduce and gossip only their
// counters (timestamp, samples, applied), which session::read_checkpoint checks.
void check_dist_rule(const DistCheckpoint& ck) {
    if (ck.plain)
        throw std::runtime_error("a plain snapshot, not a distributed run's checkpoint (use --warm-start)");
    if (ck.single_node())
        throw std::runtime_error("a single-node run's checkpoint, not a distributed run's (resume it with rudra train "
                                 "--resume, or start a distributed run from its weights with --warm-start)");
    const std::string protocol = ck.meta.at("settings").value("protocol", std::string());
    try {
        if (protocol.empty() || !dist::Protocol::is_decentralized(dist::Protocol::kind_named(protocol)))
            dist::UpdateRule::check_state(ck.meta.at("rule"));
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("checkpoint metadata unusable: ") + e.what());
    }
}

}  // namespace

std::string checkpoint_path(const std::string& output_dir) { return (fs::path(output_dir) / "checkpoint.rudra").string(); }

std::string final_snapshot_path(const std::string& output_dir) { return (fs::path(output_dir) / "final.rudra").string(); }

namespace {

std::string existing_checkpoint(const std::string& file_or_dir) {
    const std::string path = fs::is_directory(file_or_dir) ? checkpoint_path(file_or_dir) : file_or_dir;
    if (!fs::exists(path))
        throw std::runtime_error(path + ": no checkpoint there (a distributed run writes OUTDIR/checkpoint.rudra)");
    return path;
}

}  // namespace

DistCheckpoint read_dist_checkpoint(const std::string& file_or_dir) {
    return session::read_checkpoint(existing_checkpoint(file_or_dir), check_dist_rule);
}

session::Checkpoint read_any_checkpoint(const std::string& file_or_dir) {
    return session::read_checkpoint(existing_checkpoint(file_or_dir));
}

DistCheckpoint parse_dist_checkpoint(const std::string& bytes, const std::string& path) {
    return session::parse_checkpoint(bytes, path, check_dist_rule);
}

nlohmann::ordered_json run_settings(const DistOptions& o, int learners) {
    return {{"solver", o.solver},
            {"data", o.data.dir},
            {"format", o.data.format},
            {"train_limit", o.data.train_limit},
            {"test_limit", o.data.test_limit},
            {"mean", o.data.mean},
            {"bad_image", o.data.bad_image},
            {"protocol", o.protocol},
            {"n", o.n},
            {"backup", o.backup},
            {"max_staleness", o.max_staleness},
            {"k", o.k},
            {"batch", o.batch},
            {"epochs", o.epochs},
            {"mode", learner_mode_name(o.mode)},
            {"lr_modulation", o.lr_modulation},
            {"momentum_compensation", o.momentum_compensation},
            {"reference_batch", o.reference_batch},
            {"base_lr", o.base_lr},
            {"momentum", o.momentum},
            {"seed", o.seed},
            {"warm_start", o.warm_start},
            {"tau", o.tau},
            {"beta", o.beta},
            {"topology", o.topology},
            {"ranks_per_node", o.ranks_per_node},
            {"fan_out", o.fan_out},
            {"broadcast_fan_out", o.broadcast_fan_out},
            {"wire", o.wire},
            {"precision", o.kernels.precision},
            {"learners", learners}};
}

namespace {

// Where the settings come from, for the errors: the checkpoint's or the recorded run's, and why
// they must be kept.
struct SettingsSource {
    const nlohmann::json& settings;
    std::string path, whose, keeps;
};

// Takes setting `key` (command-line option `option`) from the source, or checks that the
// command line gives the same value.
template <class T>
void take(DistOptions& o, const SettingsSource& src, const char* key, const char* option, T& field, bool may_change) {
    if (!src.settings.contains(key)) return;
    const auto& value = src.settings.at(key);
    const auto unusable = [&](const std::string& why) {
        return std::runtime_error(src.path + ": " + src.whose + " setting '" + key + "' is unusable: " + why);
    };
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // A float or an integer past the field would be converted without a word.
        if (!value.is_number_integer() || value.get<int64_t>() < std::numeric_limits<T>::min() ||
            value.get<int64_t>() > std::numeric_limits<T>::max())
            throw unusable(value.dump() + " is not an integer of its range");
    }
    T saved;
    try {
        saved = value.get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw unusable(e.what());
    }
    if (!o.given.count(option)) {
        field = saved;
    } else if (!may_change && field != saved) {
        throw std::runtime_error(std::string(option) + " " + nlohmann::json(field).dump() + " differs from " + src.whose +
                                 " " + nlohmann::json(saved).dump() + " (" + src.path + "): " + src.keeps);
    }
}

}  // namespace

LearnerMode learner_mode_named(const std::string& name) {
    if (name == "base") return LearnerMode::Base;
    if (name == "overlap") return LearnerMode::Overlap;
    throw std::invalid_argument("'" + name + "' is not a mode (base or overlap)");
}

namespace {

void apply_settings(DistOptions& o, const SettingsSource& ck) {
    take(o, ck, "solver", "solver", o.solver, false);
    take(o, ck, "data", "--data", o.data.dir, false);
    take(o, ck, "format", "--format", o.data.format, false);
    take(o, ck, "train_limit", "--train-limit", o.data.train_limit, false);
    take(o, ck, "test_limit", "--test-limit", o.data.test_limit, false);
    take(o, ck, "mean", "--mean", o.data.mean, false);
    take(o, ck, "bad_image", "--bad-image", o.data.bad_image, true);
    take(o, ck, "protocol", "--protocol", o.protocol, false);
    take(o, ck, "n", "--n", o.n, false);
    take(o, ck, "backup", "--backup", o.backup, false);
    take(o, ck, "max_staleness", "--max-staleness", o.max_staleness, false);
    take(o, ck, "k", "--k", o.k, false);
    take(o, ck, "batch", "--batch", o.batch, false);
    take(o, ck, "epochs", "--epochs", o.epochs, true);
    std::string mode = learner_mode_name(o.mode);
    take(o, ck, "mode", "--mode", mode, true);
    try {
        o.mode = learner_mode_named(mode);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(ck.path + ": " + ck.whose + " setting 'mode' is unusable: " + e.what());
    }
    take(o, ck, "lr_modulation", "--lr-modulation", o.lr_modulation, false);
    take(o, ck, "momentum_compensation", "--momentum-compensation", o.momentum_compensation, false);
    take(o, ck, "reference_batch", "--reference-batch", o.reference_batch, false);
    take(o, ck, "base_lr", "--base-lr", o.base_lr, false);
    take(o, ck, "momentum", "--momentum", o.momentum, false);
    take(o, ck, "seed", "--seed", o.seed, false);
    take(o, ck, "tau", "--tau", o.tau, false);
    take(o, ck, "beta", "--beta", o.beta, false);
    take(o, ck, "topology", "--topology", o.topology, true);
    take(o, ck, "ranks_per_node", "--ranks-per-node", o.ranks_per_node, true);
    take(o, ck, "fan_out", "--fan-out", o.fan_out, true);
    take(o, ck, "broadcast_fan_out", "--broadcast-fan-out", o.broadcast_fan_out, true);
    // The formats a run computes and sends in: kept unless the command line names others.
    take(o, ck, "wire", "--wire", o.wire, true);
    take(o, ck, "precision", "--precision", o.kernels.precision, true);
}

}  // namespace

void apply_checkpoint_settings(DistOptions& o, const DistCheckpoint& ck) {
    apply_settings(o, {ck.meta.at("settings"), ck.path, "the checkpoint's", "a resumed run keeps the settings that define it"});
    if (!o.given.count("--output")) o.output = fs::path(ck.path).parent_path().string();
    if (o.output.empty()) o.output = ".";
    o.warm_start.clear();  // the checkpoint replaces it
    if (o.epochs <= ck.epoch())
        throw std::runtime_error(ck.path + " has trained " + std::to_string(ck.epoch()) +
                                 " epochs of " + std::to_string(o.epochs) +
                                 " already: raise --epochs (the total) to train further");
}

void apply_recorded_settings(DistOptions& o, const nlohmann::json& settings, const std::string& path) {
    apply_settings(o, {settings, path, "the recorded run's", "a replay computes the run as it was"});
    take(o, SettingsSource{settings, path, "the recorded run's", ""}, "warm_start", "--warm-start", o.warm_start, false);
}

}  // namespace rudra::dist::run
