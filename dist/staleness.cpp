#include "dist/staleness.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

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

namespace {

void write_array(std::ostream& o, const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
    o << '[';
    for (size_t i = from; i < std::min(to, v.size()); ++i) o << (i > from ? "," : "") << v[i];
    o << ']';
}

}  // namespace

void StalenessStats::write_json(const std::string& path, const std::string& protocol) const {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream o(tmp);
        if (!o) throw std::runtime_error(tmp + ": cannot open for writing");
        o << "{\"protocol\":\"" << protocol << "\",\"gradients\":" << gradients_ << ",\"mean\":" << mean()
          << ",\"max\":" << max_ << ",\"updates\":" << clock_offsets_.size() - 1 << ",\n\"histogram\":";
        write_array(o, overall_);
        o << ",\n\"per_learner\":[";
        for (size_t l = 0; l < per_learner_.size(); ++l) {
            o << (l ? "," : "") << "\n";
            write_array(o, per_learner_[l]);
        }
        o << "],\n\"vector_clocks\":[";
        for (size_t u = 0; u + 1 < clock_offsets_.size(); ++u) {
            o << (u ? "," : "") << (u % 16 == 0 ? "\n" : "");
            write_array(o, clock_entries_, clock_offsets_[u], clock_offsets_[u + 1]);
        }
        o << "]}\n";
        if (!o) throw std::runtime_error(tmp + ": write failed");
    }
    std::filesystem::rename(tmp, path);
}

}  // namespace rudra::dist
