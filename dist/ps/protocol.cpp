#include "dist/ps/protocol.h"

#include <stdexcept>

namespace rudra::dist {

Protocol Protocol::parse(const std::string& name, int learners, int n) {
    if (learners < 1) throw std::runtime_error("no learners: start at least 3 ranks (PS, statistics server, learners)");
    if (name == "hardsync") return hardsync(learners);
    if (name == "async") return async(learners);
    if (name == "allreduce") return allreduce(learners);
    if (name == "easgd") return easgd(learners);
    if (name == "gossip-pull" || name == "gossip-push") {
        if (learners < 2)
            throw std::runtime_error(name + " needs at least 2 learners (a peer to exchange models with); got " +
                                     std::to_string(learners));
        return gossip(learners, name == "gossip-push");
    }
    if (name == "softsync") {
        if (n < 1 || n > learners)
            throw std::runtime_error("--n " + std::to_string(n) + " must be in [1, " + std::to_string(learners) +
                                     "] (the number of learners)");
        return softsync(learners, n);
    }
    throw std::runtime_error("unknown protocol '" + name + "' (hardsync, softsync, async, easgd, allreduce, gossip-pull, gossip-push)");
}

std::string Protocol::name() const {
    switch (kind_) {
        case Kind::HardSync: return "hardsync";
        case Kind::SoftSync: return std::to_string(n_) + "-softsync";
        case Kind::Async: return "async";
        case Kind::AllReduce: return "allreduce";
        case Kind::Easgd: return "easgd";
        case Kind::GossipPull: return "gossip-pull";
        case Kind::GossipPush: return "gossip-push";
    }
    return "?";
}

int Protocol::gradients_per_update() const {
    switch (kind_) {
        case Kind::HardSync: return learners_;
        case Kind::SoftSync: return learners_ / n_ > 0 ? learners_ / n_ : 1;
        case Kind::Async: return 1;
        case Kind::AllReduce: return learners_;
        case Kind::Easgd: return 1;
        case Kind::GossipPull:
        case Kind::GossipPush: return 1;
    }
    return 1;
}

LrModulation parse_lr_modulation(const std::string& s) {
    if (s == "none") return LrModulation::None;
    if (s == "average") return LrModulation::Average;
    if (s == "per-gradient") return LrModulation::PerGradient;
    throw std::runtime_error("unknown learning-rate modulation '" + s + "' (none, average, per-gradient)");
}

}  // namespace rudra::dist
