// Staleness bookkeeping at the PS: the vector clock of every update (the timestamps of the
// gradients it averaged), histograms of per-gradient staleness per learner and overall, the
// gradients dropped (per learner), and running figures for the current epoch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rudra::dist {

class StalenessStats {
public:
    explicit StalenessStats(int learners) : per_learner_(learners), dropped_(learners, 0) {}

    void record_gradient(int learner, int64_t sigma);
    // A gradient the protocol refused (late for its update): counted, never applied.
    void record_dropped(int learner);
    // Closes an update made of the gradients with these timestamps.
    void record_update(const std::vector<int64_t>& clock);

    const std::vector<int64_t>& histogram() const { return overall_; }
    const std::vector<int64_t>& histogram(int learner) const { return per_learner_.at(learner); }
    int64_t gradients() const { return gradients_; }
    double mean() const { return gradients_ ? static_cast<double>(sum_) / gradients_ : 0.0; }
    int64_t max() const { return max_; }
    const std::vector<int64_t>& dropped() const { return dropped_; }  // by learner
    int64_t dropped_total() const;
    // Mean and max staleness and gradients dropped since the previous call, then restarts the
    // epoch window.
    void take_epoch(double& mean, int64_t& max, int64_t& dropped);
    const std::vector<int64_t>& clock_offsets() const { return clock_offsets_; }
    const std::vector<int64_t>& clock_entries() const { return clock_entries_; }

    // Histograms (overall and per learner), summary figures and every update's vector clock.
    nlohmann::ordered_json to_json(const std::string& protocol) const;
    // Writes to_json() atomically.
    void write_json(const std::string& path, const std::string& protocol) const;
    // Everything, the current epoch's window included, for a checkpoint; and back. A restored
    // run may have more or fewer learners: the histograms of the others are kept.
    nlohmann::ordered_json state() const;
    static StalenessStats from_state(const nlohmann::json& state, int learners);

private:
    std::vector<std::vector<int64_t>> per_learner_;
    std::vector<int64_t> overall_;
    int64_t gradients_ = 0, sum_ = 0, max_ = 0;
    int64_t epoch_count_ = 0, epoch_sum_ = 0, epoch_max_ = 0;
    std::vector<int64_t> clock_offsets_{0}, clock_entries_;
    std::vector<int64_t> dropped_;
    int64_t epoch_dropped_ = 0;
};

}  // namespace rudra::dist
