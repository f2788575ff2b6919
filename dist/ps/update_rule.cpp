#include "dist/ps/update_rule.h"

#include "nn/arena_loop.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rudra::dist {

double synchronous_lr_scale(int lambda, int64_t mu, int64_t reference_batch) {
    return std::sqrt(static_cast<double>(lambda) * static_cast<double>(mu) / static_cast<double>(reference_batch));
}

UpdateRule::UpdateRule(const Protocol& protocol, nn::Solver& solver, nn::ParamStore& params, int learners,
                       UpdateRuleConfig config)
    : protocol_(protocol),
      solver_(solver),
      params_(params),
      config_(config),
      drops_late_(protocol.drops_late_gradients()),
      sum_(params.size()),
      stats_(learners) {
    clock_.reserve(protocol.gradients_per_update());
    pending_learners_.reserve(protocol.gradients_per_update());
    applied_.assign(static_cast<size_t>(learners), 0);
    samples_ = config_.start_samples;
    if (protocol_.synchronous() && !drops_late_) {
        early_.resize(static_cast<size_t>(learners));
        early_full_.assign(static_cast<size_t>(learners), 0);
        bundled_.assign(static_cast<size_t>(learners), 0);
    }
}

void UpdateRule::check_learner(int learner) const {
    if (learner < 0 || learner >= static_cast<int>(applied_.size()))
        throw std::runtime_error("gradient from learner " + std::to_string(learner) + ", which is not one of the " +
                                 std::to_string(applied_.size()) + " learners");
}

// Checks one gradient against the protocol and records it: its staleness, its place in the
// update's vector clock and its samples. Returns the weight it takes in the sum.
float UpdateRule::record(int learner, int64_t ts) {
    check_learner(learner);
    if (ts > ts_ || ts < 0)
        throw std::runtime_error("gradient from learner " + std::to_string(learner) + " has timestamp " +
                                 std::to_string(ts) + ", ahead of the PS (" + std::to_string(ts_) + ")");
    if (protocol_.synchronous() && ts != ts_)
        throw std::runtime_error("hardsync: gradient of timestamp " + std::to_string(ts) + " while the PS is at " +
                                 std::to_string(ts_));
    const int64_t sigma = ts_ - ts;
    stats_.record_gradient(learner, sigma);
    sigma_sum_ += static_cast<double>(sigma);
    // A slow average, so that compensated momentum does not jump with each gradient's staleness.
    sigma_ema_ = stats_.gradients() == 1 ? static_cast<double>(sigma) : 0.99 * sigma_ema_ + 0.01 * sigma;
    clock_.push_back(ts);
    pending_learners_.push_back(learner);
    samples_ += config_.batch;
    return config_.modulation == LrModulation::PerGradient && !protocol_.elastic()
               ? 1.0f / static_cast<float>(std::max<int64_t>(sigma, 1))
               : 1.0f;
}

bool UpdateRule::add_gradient(int learner, int64_t ts, const float* grad) {
    if (record_) {
        check_learner(learner);
        record_->gradient(learner, ts);
    }
    if (drops_late_) return add_backed_up(learner, ts, grad);
    if (config_.max_staleness >= 0 && ts >= 0 && ts_ - ts > config_.max_staleness) {
        check_learner(learner);
        stats_.record_dropped(learner);
        return false;
    }
    if (protocol_.synchronous() && learner >= 0 && learner < static_cast<int>(early_full_.size()) &&
        (learner < next_learner_ || early_full_[static_cast<size_t>(learner)] || bundled_[static_cast<size_t>(learner)]))
        throw std::runtime_error("hardsync: a second gradient of timestamp " + std::to_string(ts) + " from learner " +
                                 std::to_string(learner));
    const float weight = record(learner, ts);
    const size_t n = params_.size();
    if (!protocol_.synchronous()) {
        accumulate(grad, weight);
    } else if (learner != next_learner_) {
        // Ahead of its turn: kept until the learners before it have arrived.
        if (early_[learner].size() != n) early_[learner] = kernels::AlignedBuffer(n);
        std::copy(grad, grad + n, early_[learner].data());
        early_full_[learner] = 1;
    } else {
        accumulate(grad, weight);  // hardsync's gradients are never stale: every weight is 1
        for (++next_learner_; next_learner_ < static_cast<int>(early_.size()) && early_full_[next_learner_];
             ++next_learner_) {
            accumulate(early_[next_learner_].data(), weight);
            early_full_[next_learner_] = 0;
        }
    }
    return maybe_update();
}

// Hardsync with backups, K-sync: the first gradients of the timestamp, summed as they arrive.
bool UpdateRule::add_backed_up(int learner, int64_t ts, const float* grad) {
    check_learner(learner);
    if (ts >= 0 && ts < ts_) {
        stats_.record_dropped(learner);
        return false;
    }
    if (std::find(pending_learners_.begin(), pending_learners_.end(), learner) != pending_learners_.end())
        throw std::runtime_error("hardsync: a second gradient of timestamp " + std::to_string(ts) + " from learner " +
                                 std::to_string(learner));
    accumulate(grad, record(learner, ts));
    return maybe_update();
}

bool UpdateRule::update_if_complete() {
    if (record_) record_->check();
    return maybe_update();
}

bool UpdateRule::add_bundle(const std::vector<BundledGradient>& gradients, const float* sum) {
    if (record_) throw std::logic_error("a relayed sum cannot be recorded in a schedule");
    if (gradients.empty()) throw std::runtime_error("a relayed sum that holds no gradient");
    if (drops_gradients())
        throw std::logic_error("a rule that refuses single gradients (backups, a staleness bound): not with relayed sums");
    if (config_.modulation == LrModulation::PerGradient && !protocol_.elastic())
        throw std::logic_error("per-gradient modulation needs each gradient: not with relayed sums");
    for (const BundledGradient& g : gradients) {
        if (protocol_.synchronous()) {
            const size_t l = static_cast<size_t>(g.learner);
            if (g.learner >= 0 && l < bundled_.size() && bundled_[l])
                throw std::runtime_error("hardsync: a second gradient of timestamp " + std::to_string(g.ts) +
                                         " from learner " + std::to_string(g.learner));
            if (g.learner >= 0 && l < bundled_.size()) bundled_[l] = 1;
        }
        record(g.learner, g.ts);
    }
    accumulate(sum, 1.0f);
    return maybe_update();
}

// Applies the update once the protocol has its gradients.
bool UpdateRule::maybe_update() {
    float* sum = sum_.data();
    const size_t n = params_.size();
    const int c = protocol_.gradients_per_update();
    if (static_cast<int>(clock_.size()) < c) return false;
    // With fewer live learners, c may have dropped below the gradients already pending; a relayed
    // sum is never split, so its gradients may take an update past c.
    const int taken = static_cast<int>(clock_.size());

    const float inv_c = 1.0f / static_cast<float>(taken);
    nn::arena_loop(static_cast<long>(n), [&](long i) { sum[i] *= inv_c; });
    float scale = config_.base_scale;
    if (config_.modulation == LrModulation::Average)
        scale /= static_cast<float>(std::max(1.0, sigma_sum_ / static_cast<double>(taken)));
    last_scale_ = scale;
    last_momentum_ = -1.0f;  // the solver's
    if (config_.momentum_compensation) {
        last_momentum_ = static_cast<float>(std::max(0.0, 1.0 - (1.0 - solver_.spec().momentum) * (1.0 + sigma_ema_)));
    }
    // The solver's schedule (step, multistep, ...) counts iterations of its reference batch.
    const int64_t iteration = (samples_ - static_cast<int64_t>(taken) * config_.batch) / config_.reference_batch;
    if (protocol_.elastic()) {
        float* centre = params_.values();  // EASGD: the centre moves by the learner's elastic difference
        nn::arena_loop(static_cast<long>(n), [&](long i) { centre[i] += sum[i]; });
    } else {
        solver_.apply(sum, iteration, scale, last_momentum_);
    }
    stats_.record_update(clock_);
    for (int l : pending_learners_) ++applied_[static_cast<size_t>(l)];
    clock_.clear();
    pending_learners_.clear();
    std::fill(bundled_.begin(), bundled_.end(), 0);
    sigma_sum_ = 0.0;
    next_learner_ = 0;
    accumulated_ = 0;
    ++ts_;
    return true;
}

void UpdateRule::set_live_learners(int live) {
    if (!goes_on_without_learners()) throw std::logic_error("hardsync cannot go on with fewer learners");
    if (record_) record_->live_learners(live);
    protocol_ = protocol_.with_learners(live < 1 ? 1 : live);
}

bool UpdateRule::idle() const {
    return clock_.empty() && accumulated_ == 0 &&
           std::none_of(early_full_.begin(), early_full_.end(), [](char full) { return full != 0; });
}

nlohmann::ordered_json UpdateRule::state() const {
    return {{"timestamp", ts_},
            {"samples", samples_ - static_cast<int64_t>(clock_.size()) * config_.batch},
            {"sigma_ema", sigma_ema_},
            {"applied", applied_},
            {"staleness", stats_.state()}};
}

namespace {

// Every number of a rule's state is a count, but its moving mean of staleness: a float (or a
// number past 64 bits) would be converted to an integer without a word.
void require_integers(const nlohmann::json& j, const std::string& where) {
    if (j.is_object()) {
        for (const auto& [key, value] : j.items())
            if (key != "sigma_ema") require_integers(value, where + "." + key);
    } else if (j.is_array()) {
        for (const auto& value : j) require_integers(value, where);
    } else if (j.is_number() && !j.is_number_integer()) {
        throw std::runtime_error(where + ": " + j.dump() + " where an integer belongs");
    }
}

}  // namespace

void UpdateRule::check_state(const nlohmann::json& j) {
    require_integers(j, "rule");
    if (j.at("timestamp").get<int64_t>() < 0 || j.at("samples").get<int64_t>() < 0)
        throw std::runtime_error("a negative timestamp or sample count");
    j.at("sigma_ema").get<double>();
    const auto applied = j.at("applied").get<std::vector<int64_t>>();
    if (applied.size() > (size_t{1} << 24)) throw std::runtime_error("more than 2^24 learners");
    StalenessStats::from_state(j.at("staleness"), static_cast<int>(applied.size()));
}

void UpdateRule::restore_state(const nlohmann::json& j) {
    j.at("timestamp").get_to(ts_);
    j.at("samples").get_to(samples_);
    j.at("sigma_ema").get_to(sigma_ema_);
    std::vector<int64_t> applied = j.at("applied").get<std::vector<int64_t>>();
    applied.resize(std::max(applied.size(), applied_.size()), 0);
    applied_ = std::move(applied);
    stats_ = StalenessStats::from_state(j.at("staleness"), static_cast<int>(applied_.size()));
    clock_.clear();
    pending_learners_.clear();
    accumulated_ = 0;
    next_learner_ = 0;
    std::fill(bundled_.begin(), bundled_.end(), 0);
}

// sum = weight * grad for the first gradient of an update, sum += weight * grad after it.
void UpdateRule::accumulate(const float* grad, float weight) {
    float* sum = sum_.data();
    const size_t n = params_.size();
    if (accumulated_++ == 0) {
        nn::arena_loop(static_cast<long>(n), [&](long i) { sum[i] = weight * grad[i]; });
    } else {
        nn::arena_loop(static_cast<long>(n), [&](long i) { sum[i] += weight * grad[i]; });
    }
}

}  // namespace rudra::dist
