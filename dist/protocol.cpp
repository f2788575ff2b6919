#include "dist/protocol.h"

#include <stdexcept>

namespace rudra::dist {

std::unique_ptr<Protocol> make_protocol(const std::string& protocol, int lambda, int n) {
    if (lambda < 1) throw std::runtime_error("no learners: start at least 3 ranks (PS, statistics server, learners)");
    if (protocol == "hardsync") return std::make_unique<HardSync>(lambda);
    if (protocol == "async") return std::make_unique<Async>();
    if (protocol == "softsync") {
        if (n < 1 || n > lambda)
            throw std::runtime_error("--n " + std::to_string(n) + " must be in [1, " + std::to_string(lambda) +
                                     "] (the number of learners)");
        return std::make_unique<SoftSync>(lambda, n);
    }
    throw std::runtime_error("unknown protocol '" + protocol + "' (hardsync, softsync, async)");
}

LrModulation parse_lr_modulation(const std::string& s) {
    if (s == "none") return LrModulation::None;
    if (s == "average") return LrModulation::Average;
    if (s == "per-gradient") return LrModulation::PerGradient;
    throw std::runtime_error("unknown learning-rate modulation '" + s + "' (none, average, per-gradient)");
}

}  // namespace rudra::dist
