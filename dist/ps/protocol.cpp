#include "dist/ps/protocol.h"

#include <algorithm>
#include <stdexcept>

namespace rudra::dist {

namespace {

struct NamedKind {
    const char* name;
    Protocol::Kind kind;
};
// The command line's names. SoftSync's own name carries its n ("4-softsync"), K-sync's and
// K-batch-async's their K ("3-ksync").
constexpr NamedKind kNames[] = {
    {"hardsync", Protocol::Kind::HardSync},     {"softsync", Protocol::Kind::SoftSync},
    {"async", Protocol::Kind::Async},           {"ksync", Protocol::Kind::KSync},
    {"kasync", Protocol::Kind::KAsync},         {"easgd", Protocol::Kind::Easgd},
    {"allreduce", Protocol::Kind::AllReduce},   {"gossip-pull", Protocol::Kind::GossipPull},
    {"gossip-push", Protocol::Kind::GossipPush},
};

}  // namespace

Protocol::Kind Protocol::kind_named(const std::string& name) {
    std::string choices;
    for (const NamedKind& k : kNames) {
        if (name == k.name) return k.kind;
        choices += std::string(choices.empty() ? "" : ", ") + k.name;
    }
    throw std::runtime_error("unknown protocol '" + name + "' (" + choices + ")");
}

const char* Protocol::kind_name(Kind kind) {
    for (const NamedKind& k : kNames)
        if (k.kind == kind) return k.name;
    return "?";
}

Protocol Protocol::parse(const std::string& name, int learners, int n, int backup, int k) {
    const Kind kind = kind_named(name);
    if (learners < 1) throw std::runtime_error("no learners: start at least 3 ranks (PS, statistics server, learners)");
    if (is_gossip(kind) && learners < 2)
        throw std::runtime_error(name + " needs at least 2 learners (a peer to exchange models with); got " +
                                 std::to_string(learners));
    if (kind == Kind::SoftSync && (n < 1 || n > learners))
        throw std::runtime_error("--n " + std::to_string(n) + " must be in [1, " + std::to_string(learners) +
                                 "] (the number of learners)");
    if (backup != 0 && kind != Kind::HardSync)
        throw std::runtime_error("--backup is for hardsync (an update that does without its latest gradients); " +
                                 name + " has no such wait");
    if (backup < 0 || backup >= learners)
        throw std::runtime_error("--backup " + std::to_string(backup) + " must be in [0, " +
                                 std::to_string(learners - 1) + "] (below the number of learners)");
    const bool takes_k = kind == Kind::KSync || kind == Kind::KAsync;
    if (k != 0 && !takes_k) throw std::runtime_error("--k is for ksync and kasync; " + name + " has no K");
    if (takes_k && (k < 1 || k > learners))
        throw std::runtime_error("--protocol " + name + " needs --k K in [1, " + std::to_string(learners) +
                                 "] (gradients per update, at most the number of learners); got " + std::to_string(k));
    return Protocol(kind, learners, kind == Kind::SoftSync ? n : 1, backup, k);
}

Protocol Protocol::with_learners(int live) const {
    if (kind_ == Kind::HardSync) {
        const int c = std::min(learners_ - backup_, live);
        return Protocol(kind_, live, 1, live - c);
    }
    if (kind_ == Kind::KSync || kind_ == Kind::KAsync) return Protocol(kind_, live, 1, 0, std::min(k_, live));
    return Protocol(kind_, live, n_ < live ? n_ : live);
}

std::string Protocol::name() const {
    if (kind_ == Kind::SoftSync) return std::to_string(n_) + "-softsync";
    if (backup_ > 0) return std::to_string(backup_) + "-backup-hardsync";
    if (kind_ == Kind::KSync) return std::to_string(k_) + "-ksync";
    if (kind_ == Kind::KAsync) return std::to_string(k_) + "-kasync";
    for (const NamedKind& k : kNames)
        if (k.kind == kind_) return k.name;
    return "?";
}

int Protocol::gradients_per_update() const {
    switch (kind_) {
        case Kind::HardSync: return learners_ - backup_;
        case Kind::SoftSync: return learners_ / n_ > 0 ? learners_ / n_ : 1;
        case Kind::Async: return 1;
        case Kind::KSync:
        case Kind::KAsync: return k_;
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
