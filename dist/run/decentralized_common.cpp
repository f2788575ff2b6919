// What the learners of the decentralized methods (all-reduce, gossip) share: their checkpoint and
// the start of a resumed run.
#include "dist/run/roles.h"

#include <algorithm>

namespace rudra::dist::run {

// In the metadata, the fields the PS protocols' checkpoints use.
void write_learners_checkpoint(const RoleContext& c, const session::TrainingSession& run, const std::string& reason,
                               int64_t steps, int64_t samples, double elapsed_s, const float* weights,
                               const std::vector<int64_t>& taken) {
    const DistOptions& o = c.o;
    const Setup& s = c.s;
    const int lambda = c.group->members();
    const int64_t samples_per_epoch = static_cast<int64_t>(c.sets.train.size());
    const int64_t epoch = samples / std::max<int64_t>(1, samples_per_epoch);
    nn::Snapshot snap = run.snapshot(static_cast<uint64_t>(steps), static_cast<uint64_t>(samples), s.spec.seed);
    if (weights) std::copy(weights, weights + snap.params.size(), snap.params.begin());
    session::CheckpointFacts facts;
    facts.method = o.protocol;
    facts.reason = reason;
    facts.epoch = epoch;
    facts.elapsed_s = elapsed_s;
    facts.settings = run_settings(o, lambda);
    facts.rule = {{"timestamp", steps},
                  {"samples", samples},
                  {"applied", taken.empty() ? std::vector<int64_t>(static_cast<size_t>(lambda), steps) : taken}};
    const CheckpointLine line{o.protocol,
                              "step " + std::to_string(taken.empty() ? steps : *std::max_element(taken.begin(), taken.end())),
                              samples % std::max<int64_t>(1, samples_per_epoch) != 0};
    write_checkpoint(o.output, std::move(snap), facts, line);
}

int64_t resumed_steps(const RoleContext& c, session::TrainingSession& run, session::TrainingSession::History history) {
    const Setup& s = c.s;
    const bool first = c.transport.rank() == kPsRank;
    const int learners = c.group->members();
    if (!s.resume) return 0;
    run.restore(s.resume->snapshot, s.resume->path, history);
    const int64_t steps = s.resume->meta.at("rule").value("timestamp", int64_t{0});
    const int before = s.resume->learners();
    if (first)
        say("resuming from " + s.resume->path + " (" + s.resume->meta.value("reason", std::string("?")) +
            " checkpoint of " + s.resume->meta.value("written_at", std::string("?")) + "): epoch " +
            std::to_string(s.resume->epoch()) + ", step " + std::to_string(steps) + ", " +
            std::to_string(s.resume->samples()) + " samples" +
            (before != learners ? ", with " + std::to_string(learners) + " learners instead of " + std::to_string(before)
                                : std::string()));
    return steps;
}

}  // namespace rudra::dist::run
