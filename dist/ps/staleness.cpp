#include "dist/ps/staleness.h"

#include <algorithm>
#include <stdexcept>

#include "nn/atomic_file.h"

namespace rudra::dist {

void StalenessStats::record_gradient(int learner, int64_t sigma) {
    auto bump = [sigma](std::vector<int64_t>& h) {
        if (static_cast<int64_t>(h.size()) <= sigma) h.resize(sigma + 1, 0);
        ++h[sigma];
    };
    bump(overall_);
    bump(per_learner_.at(learner));
    ++gradients_;
    sum_ += sigma;
    max_ = std::max(max_, sigma);
    ++epoch_count_;
    epoch_sum_ += sigma;
    epoch_max_ = std::max(epoch_max_, sigma);
}

void StalenessStats::record_dropped(int learner) {
    ++dropped_.at(static_cast<size_t>(learner));
    ++epoch_dropped_;
}

int64_t StalenessStats::dropped_total() const {
    int64_t total = 0;
    for (int64_t d : dropped_) total += d;
    return total;
}

void StalenessStats::record_update(const std::vector<int64_t>& clock) {
    clock_entries_.insert(clock_entries_.end(), clock.begin(), clock.end());
    clock_offsets_.push_back(static_cast<int64_t>(clock_entries_.size()));
}

void StalenessStats::take_epoch(double& mean, int64_t& max, int64_t& dropped) {
    mean = epoch_count_ ? static_cast<double>(epoch_sum_) / epoch_count_ : 0.0;
    max = epoch_max_;
    dropped = epoch_dropped_;
    epoch_count_ = epoch_sum_ = epoch_max_ = epoch_dropped_ = 0;
}

nlohmann::ordered_json StalenessStats::to_json(const std::string& protocol) const {
    nlohmann::ordered_json j{{"protocol", protocol}, {"gradients", gradients_}, {"mean", mean()}, {"max", max_},
                             {"updates", clock_offsets_.size() - 1}, {"histogram", overall_},
                             {"per_learner", per_learner_}, {"dropped", dropped_total()},
                             {"dropped_per_learner", dropped_}};
    nlohmann::ordered_json clocks = nlohmann::ordered_json::array();
    for (size_t u = 0; u + 1 < clock_offsets_.size(); ++u)
        clocks.push_back(std::vector<int64_t>(clock_entries_.begin() + clock_offsets_[u],
                                              clock_entries_.begin() + clock_offsets_[u + 1]));
    j["vector_clocks"] = std::move(clocks);
    return j;
}

void StalenessStats::write_json(const std::string& path, const std::string& protocol) const {
    nn::write_file_atomically(path, to_json(protocol).dump() + "\n");
}

nlohmann::ordered_json StalenessStats::state() const {
    return {{"per_learner", per_learner_}, {"overall", overall_},   {"gradients", gradients_},
            {"sum", sum_},                 {"max", max_},           {"epoch_count", epoch_count_},
            {"epoch_sum", epoch_sum_},     {"epoch_max", epoch_max_}, {"clock_offsets", clock_offsets_},
            {"clock_entries", clock_entries_}, {"dropped", dropped_},   {"epoch_dropped", epoch_dropped_}};
}

StalenessStats StalenessStats::from_state(const nlohmann::json& j, int learners) {
    StalenessStats s(learners);
    j.at("per_learner").get_to(s.per_learner_);
    if (static_cast<int>(s.per_learner_.size()) < learners) s.per_learner_.resize(static_cast<size_t>(learners));
    j.at("overall").get_to(s.overall_);
    j.at("gradients").get_to(s.gradients_);
    j.at("sum").get_to(s.sum_);
    j.at("max").get_to(s.max_);
    j.at("epoch_count").get_to(s.epoch_count_);
    j.at("epoch_sum").get_to(s.epoch_sum_);
    j.at("epoch_max").get_to(s.epoch_max_);
    j.at("clock_offsets").get_to(s.clock_offsets_);
    j.at("clock_entries").get_to(s.clock_entries_);
    // Checkpoints written before gradients could be dropped have no counts: none were.
    if (j.contains("dropped")) j.at("dropped").get_to(s.dropped_);
    if (static_cast<int>(s.dropped_.size()) < learners) s.dropped_.resize(static_cast<size_t>(learners), 0);
    s.epoch_dropped_ = j.value("epoch_dropped", int64_t{0});
    // Each update's clock is entries [offsets[u], offsets[u + 1]): the offsets start at 0, never
    // fall, and end at the entries' count, or the clocks would be read outside them.
    bool clocks_add_up = !s.clock_offsets_.empty() && s.clock_offsets_.front() == 0 &&
                         s.clock_offsets_.back() == static_cast<int64_t>(s.clock_entries_.size());
    for (size_t u = 1; clocks_add_up && u < s.clock_offsets_.size(); ++u)
        clocks_add_up = s.clock_offsets_[u] >= s.clock_offsets_[u - 1];
    if (!clocks_add_up) throw std::runtime_error("staleness statistics: vector clocks do not add up");
    const bool negative_drop = std::any_of(s.dropped_.begin(), s.dropped_.end(), [](int64_t d) { return d < 0; });
    if (s.gradients_ < 0 || s.max_ < 0 || s.epoch_count_ < 0 || s.epoch_max_ < 0 || s.epoch_dropped_ < 0 || negative_drop)
        throw std::runtime_error("staleness statistics: a negative count");
    return s;
}

}  // namespace rudra::dist
