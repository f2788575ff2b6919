#include "dist/staleness.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

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

void StalenessStats::record_update(const std::vector<int64_t>& clock) {
    clock_entries_.insert(clock_entries_.end(), clock.begin(), clock.end());
    clock_offsets_.push_back(static_cast<int64_t>(clock_entries_.size()));
}

void StalenessStats::take_epoch(double& mean, int64_t& max) {
    mean = epoch_count_ ? static_cast<double>(epoch_sum_) / epoch_count_ : 0.0;
    max = epoch_max_;
    epoch_count_ = epoch_sum_ = epoch_max_ = 0;
}

void StalenessStats::write_json(const std::string& path, const std::string& protocol) const {
    nlohmann::ordered_json j{{"protocol", protocol}, {"gradients", gradients_}, {"mean", mean()}, {"max", max_},
                             {"updates", clock_offsets_.size() - 1}, {"histogram", overall_},
                             {"per_learner", per_learner_}};
    nlohmann::ordered_json clocks = nlohmann::ordered_json::array();
    for (size_t u = 0; u + 1 < clock_offsets_.size(); ++u)
        clocks.push_back(std::vector<int64_t>(clock_entries_.begin() + clock_offsets_[u],
                                              clock_entries_.begin() + clock_offsets_[u + 1]));
    j["vector_clocks"] = std::move(clocks);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream o(tmp);
        if (!o) throw std::runtime_error(tmp + ": cannot open for writing");
        o << j.dump() << '\n';
        if (!o) throw std::runtime_error(tmp + ": write failed");
    }
    std::filesystem::rename(tmp, path);
}

}  // namespace rudra::dist
