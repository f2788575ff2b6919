// Synchronisation protocols as small policy objects (the paper's equations (3)-(5)): how many
// gradients make one update, and whether learners must compute on the newest weights.
#pragma once
#include <memory>
#include <string>

namespace rudra::dist {

class Protocol {
public:
    virtual ~Protocol() = default;
    virtual std::string name() const = 0;
    // c: gradients averaged into one update.
    virtual int gradients_per_update() const = 0;
    // Hardsync: every learner computes exactly one gradient on each timestamp, so learners wait
    // for the next weights and the PS takes only gradients of the current timestamp.
    virtual bool synchronous() const { return false; }
};

// hardsync: c = lambda gradients, all from the same weights.
class HardSync final : public Protocol {
public:
    explicit HardSync(int lambda) : lambda_(lambda) {}
    std::string name() const override { return "hardsync"; }
    int gradients_per_update() const override { return lambda_; }
    bool synchronous() const override { return true; }

private:
    int lambda_;
};

// n-softsync: c = floor(lambda / n) gradients from any learners (n = lambda: one each).
class SoftSync final : public Protocol {
public:
    SoftSync(int lambda, int n) : lambda_(lambda), n_(n) {}
    std::string name() const override { return std::to_string(n_) + "-softsync"; }
    int gradients_per_update() const override { return lambda_ / n_ > 0 ? lambda_ / n_ : 1; }

private:
    int lambda_, n_;
};

// async (Downpour-style): every gradient is applied when it arrives.
class Async final : public Protocol {
public:
    std::string name() const override { return "async"; }
    int gradients_per_update() const override { return 1; }
};

// protocol: "hardsync", "softsync" (with n in [1, lambda]) or "async". Throws on bad values.
std::unique_ptr<Protocol> make_protocol(const std::string& protocol, int lambda, int n);

// Learning-rate modulation for stale gradients.
enum class LrModulation {
    None,         // alpha0
    Average,      // alpha0 / max(<sigma>, 1) per update (the paper's softsync rule)
    PerGradient,  // each gradient scaled by 1 / max(sigma, 1) before averaging (footnote 2)
};

LrModulation parse_lr_modulation(const std::string& s);

}  // namespace rudra::dist
