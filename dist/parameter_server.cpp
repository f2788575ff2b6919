#include "dist/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "dist/messages.h"

namespace rudra::dist {

ParameterServer::ParameterServer(Transport& transport, UpdateRule& rule, nn::ParamStore& params, PsConfig config)
    : t_(transport), rule_(rule), params_(params), config_(std::move(config)) {
    in_.reserve(sizeof(GradientHeader) + params_.size() * sizeof(float));
    out_.reserve(sizeof(EpochWeightsHeader) + params_.size() * sizeof(float));
}

int ParameterServer::learner_index(int rank) const {
    auto it = std::find(config_.learner_ranks.begin(), config_.learner_ranks.end(), rank);
    if (it == config_.learner_ranks.end()) throw std::runtime_error("PS: message from rank " + std::to_string(rank) + ", which is not a learner");
    return static_cast<int>(it - config_.learner_ranks.begin());
}

void ParameterServer::reply(int rank, int64_t have_ts) {
    const int64_t ts = rule_.timestamp();
    const bool newer = ts > have_ts;
    pack(out_, WeightsReply{ts, newer ? 1 : 0}, newer ? params_.values() : nullptr, newer ? params_.size() : 0);
    t_.send(rank, kWeightsReply, out_.data(), out_.size());
}

void ParameterServer::send_epoch_weights(int64_t epoch, bool final, double elapsed_s) {
    EpochWeightsHeader h{};
    h.epoch = epoch;
    h.ts = rule_.timestamp();
    h.samples = rule_.samples();
    h.elapsed_s = elapsed_s;
    rule_.staleness().take_epoch(h.staleness_mean, h.staleness_max);
    h.final = final ? 1 : 0;
    pack(out_, h, params_.values(), params_.size());
    t_.send(config_.stats_rank, kEpochWeights, out_.data(), out_.size());
}

PsResult ParameterServer::run() {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const int learners = static_cast<int>(config_.learner_ranks.size());
    std::vector<std::pair<int, WeightsRequest>> deferred;  // hardsync requests waiting for min_ts
    deferred.reserve(learners);
    std::vector<char> stopped(learners, 0);
    bool stopping = false;
    int byes = 0;
    int64_t epoch = rule_.samples() / config_.samples_per_epoch;  // after a warm start, the epochs done
    PsResult result;
    while (byes < learners) {
        Envelope e = t_.recv(kAnySource, kAnyTag, in_);
        const int learner = learner_index(e.source);
        switch (e.tag) {
            case kWeightsRequest: {
                const auto req = unpack_header<WeightsRequest>(in_);
                if (stopping) {
                    t_.send(e.source, kStop, nullptr, 0);
                    stopped[learner] = 1;
                } else if (rule_.timestamp() >= req.min_ts) {
                    reply(e.source, req.have_ts);
                } else {
                    deferred.emplace_back(e.source, req);
                }
                break;
            }
            case kGradient: {
                if (stopping) {
                    ++result.dropped_gradients;
                    break;
                }
                const auto h = unpack_header<GradientHeader>(in_);
                if (in_.size() != sizeof(GradientHeader) + params_.size() * sizeof(float))
                    throw std::runtime_error("PS: gradient of " + std::to_string(in_.size()) + " bytes from rank " +
                                             std::to_string(e.source) + " does not match the model");
                const float* grad = reinterpret_cast<const float*>(in_.data() + sizeof(GradientHeader));
                if (!rule_.add_gradient(learner, h.ts, grad)) break;
                // An update: epoch boundary, then the requests that waited for this timestamp.
                if (rule_.samples() >= (epoch + 1) * config_.samples_per_epoch) {
                    ++epoch;
                    stopping = epoch >= config_.epochs;
                    send_epoch_weights(epoch, stopping, elapsed());
                }
                for (size_t i = 0; i < deferred.size();) {
                    if (stopping) {
                        t_.send(deferred[i].first, kStop, nullptr, 0);
                        stopped[learner_index(deferred[i].first)] = 1;
                    } else if (rule_.timestamp() >= deferred[i].second.min_ts) {
                        reply(deferred[i].first, deferred[i].second.have_ts);
                    } else {
                        ++i;
                        continue;
                    }
                    deferred.erase(deferred.begin() + static_cast<long>(i));
                }
                break;
            }
            case kBye:
                ++byes;
                break;
            default:
                throw std::runtime_error("PS: unexpected message tag " + std::to_string(e.tag) + " from rank " +
                                         std::to_string(e.source));
        }
    }
    result.updates = rule_.timestamp();
    result.samples = rule_.samples();
    result.elapsed_s = elapsed();
    return result;
}

}  // namespace rudra::dist
