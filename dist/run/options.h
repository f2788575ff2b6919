// What `rudra dist` is asked to do: its options, as the command line (tools/rudra_main.cpp) or a
// checkpoint's settings (dist/run/checkpoint.h) give them.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "dist/transport/transport.h"
#include "nn/kernel_options.h"
#include "session/data_setup.h"

namespace rudra::dist::run {

// A PS protocol's learners: Rudra-base waits for each pull; overlap computes on the newest weights
// it holds while the next pull runs.
enum class LearnerMode { Base, Overlap };
inline const char* learner_mode_name(LearnerMode m) { return m == LearnerMode::Overlap ? "overlap" : "base"; }
// "base" or "overlap"; throws std::invalid_argument on another name.
LearnerMode learner_mode_named(const std::string& name);

struct DistOptions {
    std::string solver;
    session::DataOptions data;
    std::string protocol = "softsync";
    int n = 1;                  // softsync's n
    int backup = 0;             // hardsync's backup learners
    int max_staleness = -1;     // softsync, async, kasync: the staleness bound (-1: none)
    int k = 0;                  // ksync's and kasync's K (0: not given)
    int batch = 0;              // mu per learner (0: the Data layer's batch_size)
    int epochs = 1;
    LearnerMode mode = LearnerMode::Base;
    std::string lr_modulation;  // none | average | per-gradient ("": protocol default)
    bool momentum_compensation = false;  // lower momentum by the mean staleness (update_rule.h)
    int reference_batch = 0;    // B in hardsync's alpha0 * sqrt(lambda * mu / B) (0: the Data layer's)
    std::string warm_start;
    double base_lr = 0;         // alpha0 (0: the solver's base_lr)
    double momentum = -1;       // the PS's momentum (< 0: the solver's)
    int64_t seed = -1;
    int threads = 1;            // OpenMP threads per rank
    int wait_spin = -1, wait_sleep_us = -1;  // -1: chosen from the load (WaitPolicy::for_load)
    std::string output = "rudra-dist";
    nn::KernelOptions kernels;  // --conv-backend
    std::string bind = "auto";  // on | auto | off (bind_threads)
    std::string resume;         // a checkpoint, or the output directory that holds one
    std::string replay;         // a run's output directory or schedule record, computed again in one process
    std::string checkpoint_every = "600s";  // N updates or Ns seconds between checkpoints; 0: none
    double peer_timeout = dist::kDefaultPeerTimeoutS;   // seconds of silence after which a rank is lost
    double startup_timeout = 600;  // seconds from a rank's start to training (every rank set up)
    bool overwrite = false;     // replace another run's files in `output` (a fresh run refuses them)
    int tau = 1;                // EASGD, gossip: local steps between exchanges (with the centre, or a peer)
    double beta = 0;            // EASGD: moving rate in (0, 1] (0: 0.9 / learners)
    std::string straggler;      // RANK|all:FACTOR[:P]: that learner's compute (each learner's) is slowed FACTOR times, each mini-batch with probability P ("": none)
    std::string timeline;       // a Chrome-trace file of every rank's spans ("": none)
    bool ps_receive_ahead = false;  // the PS receives the next message while it updates
    std::string wire = "fp32";      // fp32 | bf16: the format of weights and gradients (dist/transport/wire.h)
    std::string node_data_dir = "/dev/shm";  // where a node's ranks share one copy of the data ("": none)
    bool json = false;          // the metrics lines on stdout as JSON, instead of readable lines
    std::string progress = "auto";  // auto | bar | lines | off: progress within an epoch
    std::string topology = "base";  // base | adv | adv* (dist/ps/topology.h)
    int ranks_per_node = 0;     // adv: emulated nodes of this many consecutive ranks (0: the real nodes)
    int fan_out = 0;            // adv: leaf PSs below each parent (0: all below the root)
    int broadcast_fan_out = 2;  // adv*: learners each forwards the weights to
    std::set<std::string> given;  // options on the command line ("--protocol", "solver"): a resume keeps the rest
};

// Runs this process's rank of the job described by `o`: initialises MPI itself
// (MPI_THREAD_MULTIPLE); every rank calls it. Returns the exit code (session/exit_codes.h).
int run_job(const DistOptions& o, int* argc, char*** argv);

}  // namespace rudra::dist::run
