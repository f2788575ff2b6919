// Synchronisation protocols as values (the paper's equations (3)-(5)), parsed once from the
// command line: how many gradients make one update, whether learners must compute on the newest
// weights, the learning-rate rule that suits them, and whether a parameter server runs them.
#pragma once
#include <string>

namespace rudra::dist {

// Learning-rate modulation for stale gradients.
enum class LrModulation {
    None,         // alpha0
    Average,      // alpha0 / max(<sigma>, 1) per update (the paper's softsync rule)
    PerGradient,  // each gradient scaled by 1 / max(sigma, 1) before averaging (footnote 2)
};

// "none", "average" or "per-gradient"; throws naming the choices.
LrModulation parse_lr_modulation(const std::string& s);

class Protocol {
public:
    enum class Kind {
        HardSync,  // c = lambda gradients, all computed on the same weights
        SoftSync,  // n-softsync: c = floor(lambda / n) gradients from any learners
        Async,     // Downpour-style: every gradient is applied when it arrives
        KSync,     // K-sync (Dutta et al.): the first c = K gradients of the weights' timestamp; the
                   // late ones are dropped, and every learner computes next on the new weights
        KAsync,    // K-batch-async (Dutta et al.): c = K gradients from any learners, which never wait
        AllReduce,  // no PS: every learner sums all gradients (MPI all-reduce) and steps alike
        Easgd,      // elastic averaging: learners step locally; the PS's centre takes their differences
        GossipPull, // no PS: learners step locally and average with a random peer's model they fetch
        GossipPush, // no PS: learners step locally, send their model to a random peer, average what came
    };

    // "hardsync", "softsync" (n in [1, learners]), "async", "ksync", "kasync" (k in [1, learners]),
    // "easgd", "allreduce", "gossip-pull" or "gossip-push" (at least 2 learners) for `learners`
    // learners; `backup` (hardsync only, below `learners`) learners' gradients an update does
    // without. Throws naming the choices or the range.
    static Protocol parse(const std::string& name, int learners, int n = 1, int backup = 0, int k = 0);
    // The kind a name gives, before the learners are known (what the options allow depends on
    // it); throws naming the choices. The names are written here once.
    static Kind kind_named(const std::string& name);
    static const char* kind_name(Kind kind);  // the command line's name ("softsync")
    static bool is_gossip(Kind k) { return k == Kind::GossipPull || k == Kind::GossipPush; }
    // All-reduce and gossip run without a parameter server: rank 0 is a learner.
    static bool is_decentralized(Kind k) { return k == Kind::AllReduce || is_gossip(k); }
    // Hardsync with `backup` backup learners: an update averages the first learners - backup
    // gradients of its timestamp, and the late ones are dropped.
    static Protocol hardsync(int learners, int backup = 0) { return Protocol(Kind::HardSync, learners, 1, backup); }
    static Protocol softsync(int learners, int n) { return Protocol(Kind::SoftSync, learners, n); }
    static Protocol async(int learners = 1) { return Protocol(Kind::Async, learners, 1); }
    static Protocol ksync(int learners, int k) { return Protocol(Kind::KSync, learners, 1, 0, k); }
    static Protocol kasync(int learners, int k) { return Protocol(Kind::KAsync, learners, 1, 0, k); }
    static Protocol allreduce(int learners) { return Protocol(Kind::AllReduce, learners, 1); }
    static Protocol easgd(int learners) { return Protocol(Kind::Easgd, learners, 1); }
    static Protocol gossip(int learners, bool push) {
        return Protocol(push ? Kind::GossipPush : Kind::GossipPull, learners, 1);
    }

    // The same protocol over `live` learners, when others were lost: n-softsync keeps its n (at
    // most `live`), so an update averages floor(live / n) gradients; hardsync with backups keeps
    // its count of gradients while as many learners live (the lost ones used up backups), and so
    // do K-sync and K-batch-async.
    Protocol with_learners(int live) const;
    int n() const { return n_; }
    int backup() const { return backup_; }
    int k() const { return k_; }

    Kind kind() const { return kind_; }
    int learners() const { return learners_; }
    // "hardsync", "4-softsync", "async", "2-backup-hardsync", "3-ksync", "3-kasync": as the
    // metrics name them.
    std::string name() const;
    // c: gradients averaged into one update.
    int gradients_per_update() const;
    // EASGD: the PS adds what it receives (elastic differences) to the centre, without a solver.
    bool elastic() const { return kind_ == Kind::Easgd; }
    // Hardsync and K-sync: every learner computes exactly one gradient on each timestamp, so
    // learners wait for the next weights and the PS takes only gradients of the current timestamp.
    bool synchronous() const { return kind_ == Kind::HardSync || kind_ == Kind::KSync; }
    // Hardsync with backups and K-sync: a gradient that arrives after its timestamp's update is dropped.
    bool drops_late_gradients() const { return (kind_ == Kind::HardSync && backup_ > 0) || kind_ == Kind::KSync; }
    // The rate rule when none is asked for: softsync divides by the mean staleness.
    LrModulation default_modulation() const {
        return kind_ == Kind::SoftSync || kind_ == Kind::KAsync ? LrModulation::Average : LrModulation::None;
    }
    bool has_parameter_server() const { return !decentralized(); }
    bool decentralized() const { return is_decentralized(kind_); }
    bool gossip() const { return is_gossip(kind_); }

private:
    Protocol(Kind kind, int learners, int n, int backup = 0, int k = 0)
        : kind_(kind), learners_(learners), n_(n), backup_(backup), k_(k) {}
    Kind kind_;
    int learners_, n_, backup_, k_;
};

}  // namespace rudra::dist
