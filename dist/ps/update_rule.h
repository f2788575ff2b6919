// The PS's arithmetic, without communication: collects gradients, and when the protocol has
// enough of them, averages them and applies one solver step with the modulated learning rate.
// The timestamp counts updates. Staleness of a gradient = PS timestamp at arrival - its own.
//
// Hardsync sums the lambda gradients of a timestamp in learner order, whatever order they
// arrive in (a gradient that arrives before its predecessors waits in a buffer of its own), so
// that two runs with the same seed end with the same weights, bit for bit. Softsync and async
// cannot be: which gradients make an update, and how stale they are, depends on timing. Nor can
// hardsync with backups and K-sync: an update sums the first lambda - B (K) gradients of the
// timestamp in the order they arrive (the same arrivals give the same weights), and drops the
// late ones.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/ps/protocol.h"
#include "dist/ps/schedule_record.h"
#include "dist/ps/staleness.h"
#include "kernels/aligned_buffer.h"
#include "nn/param_store.h"
#include "nn/solver.h"

namespace rudra::dist {

// Hardsync's rate for one update of lambda mini-batches of mu samples, as a factor of the
// solver's alpha0: sqrt(lambda * mu / B), B the reference batch (all-reduce uses it too).
double synchronous_lr_scale(int lambda, int64_t mu, int64_t reference_batch);

struct UpdateRuleConfig {
    LrModulation modulation = LrModulation::None;
    // Multiplies every rate: alpha0 * sqrt(lambda * mu / B) for hardsync, else 1.
    float base_scale = 1.0f;
    // Samples one gradient stands for, and the solver's reference batch: the solver's schedule
    // runs on iterations of `reference_batch` samples.
    int batch = 1;
    int reference_batch = 1;
    // Asynchrony acts as extra momentum (Mitliagkas et al., "Asynchrony begets momentum"): with
    // compensation the solver's momentum m becomes max(0, 1 - (1 - m)(1 + <sigma>)), so that
    // explicit and implicit momentum together stay near m. <sigma> is a running mean of staleness
    // (over about the last 100 gradients).
    bool momentum_compensation = false;
    // Samples trained before this run (a warm start): the schedule and epochs continue from there.
    int64_t start_samples = 0;
    // A staleness bound (softsync, async): a gradient more than this many updates old is refused
    // and counted, never applied. -1: none.
    int64_t max_staleness = -1;
};

// One gradient inside a relayed sum (Rudra-adv): its learner and the timestamp it was computed from.
struct BundledGradient {
    int learner = 0;
    int64_t ts = 0;
};

class UpdateRule {
public:
    UpdateRule(const Protocol& protocol, nn::Solver& solver, nn::ParamStore& params, int learners,
               UpdateRuleConfig config);

    // Takes a gradient computed on the weights of timestamp `ts`. Returns true when it
    // completed an update (the timestamp then advanced by one). Hardsync with backups drops (and
    // counts) a gradient of an earlier timestamp; a staleness bound, one older than the bound.
    bool add_gradient(int learner, int64_t ts, const float* grad);
    // Takes the sum of `gradients` (relayed by a leaf PS): each is counted, clocked and weighed
    // for staleness as if it had come alone; the sum is never split, so an update may take more
    // than c gradients. Not with per-gradient modulation, which must weigh each before the sum.
    bool add_bundle(const std::vector<BundledGradient>& gradients, const float* sum);

    // Some learners were lost (not for hardsync without backups): later updates average as many
    // gradients as the protocol takes from `live` learners.
    void set_live_learners(int live);
    // Makes the update if the gradients pending are now enough (after set_live_learners: K-sync's
    // learners wait for the update, and would send no gradient to trigger it). True if it did.
    bool update_if_complete();
    // Every later call of add_gradient, set_live_learners and update_if_complete is written into
    // `record` (null: none), which must outlive the rule. Not with add_bundle: a relayed sum's
    // order of addition is the leaf PS's.
    void record_into(ScheduleRecord* record) { record_ = record; }
    // Hardsync with backups and K-sync, whatever learners were lost since: late gradients are
    // dropped, and a lost learner is one more late one.
    bool drops_late_gradients() const { return drops_late_; }
    // Whether some gradients are refused (late under backups, or past a staleness bound).
    bool drops_gradients() const { return drops_late_ || config_.max_staleness >= 0; }
    // Whether updates go on when a learner is lost: not under hardsync without backups.
    bool goes_on_without_learners() const { return !protocol_.synchronous() || drops_late_; }
    int gradients_per_update() const { return protocol_.gradients_per_update(); }
    const Protocol& protocol() const { return protocol_; }
    // Gradients of `learner` that completed updates: its position in its sample stream.
    int64_t applied(int learner) const { return applied_.at(static_cast<size_t>(learner)); }

    // The counters and statistics a checkpoint keeps (the weights and solver history are the
    // snapshot's); a restored rule goes on from the checkpoint's update. Gradients of an update
    // in progress are not kept: their learners compute them again from the same samples.
    nlohmann::ordered_json state() const;
    void restore_state(const nlohmann::json& state);
    // Throws (std::runtime_error or a JSON error saying which field) unless `state` is one that
    // restore_state takes: checked when a checkpoint is read, before any rank relies on it.
    static void check_state(const nlohmann::json& state);

    // No gradient is waiting for an update: state() is then the whole of the rule.
    bool idle() const;

    int64_t timestamp() const { return ts_; }
    int64_t samples() const { return samples_; }
    const StalenessStats& staleness() const { return stats_; }
    StalenessStats& staleness() { return stats_; }
    float last_lr_scale() const { return last_scale_; }
    float last_momentum() const { return last_momentum_; }

private:
    Protocol protocol_;
    nn::Solver& solver_;
    nn::ParamStore& params_;
    UpdateRuleConfig config_;
    const bool drops_late_;
    ScheduleRecord* record_ = nullptr;
    void accumulate(const float* grad, float weight);
    float record(int learner, int64_t ts);
    bool maybe_update();
    bool add_backed_up(int learner, int64_t ts, const float* grad);
    void check_learner(int learner) const;

    kernels::AlignedBuffer sum_;
    std::vector<int64_t> clock_;  // timestamps of the pending gradients
    std::vector<int> pending_learners_;  // and their learners
    std::vector<int64_t> applied_;       // by learner: gradients in completed updates
    // Hardsync: the next learner whose gradient joins the sum, and the gradients that arrived
    // ahead of it (allocated on first use).
    int next_learner_ = 0;
    int accumulated_ = 0;  // gradients in sum_
    std::vector<kernels::AlignedBuffer> early_;
    std::vector<char> early_full_;
    std::vector<char> bundled_;  // hardsync: learners whose gradient came in a relayed sum
    StalenessStats stats_;
    int64_t ts_ = 0, samples_ = 0;
    double sigma_sum_ = 0.0, sigma_ema_ = 0.0;
    float last_scale_ = 1.0f, last_momentum_ = -1.0f;
};

}  // namespace rudra::dist
