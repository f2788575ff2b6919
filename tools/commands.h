// The subcommands of `rudra`. Each returns the process exit code; errors are thrown as
// exceptions whose message names the file and the problem, and main() prints them.
#pragma once
#include <cstdint>
#include <string>

#include "tools/model_setup.h"

namespace rudra::tools {

struct TrainOptions {
    std::string solver;
    DataOptions data;
    double epochs = 0;   // 0: the solver's max_iter
    int batch = 0;       // 0: the Data layer's batch_size
    int64_t seed = -1;   // -1: the solver's random_seed, else 1
    std::string output;  // metrics and snapshots
    std::string resume;  // snapshot to continue from
};
int run_train(const TrainOptions& o);

struct TestOptions {
    std::string model;  // solver or net prototxt
    std::string snapshot;
    DataOptions data;
    int batch = 0;
};
int run_test(const TestOptions& o);

struct TimeOptions {
    std::string model;
    int batch = 0;
    int iterations = 10;
    std::string input_shape;  // "C,H,W" for nets with a Data layer
    std::string phase = "train";
    std::string json;         // optional JSON-lines output file
};
int run_time(const TimeOptions& o);

struct DistOptions {
    std::string solver;
    DataOptions data;
    std::string protocol = "softsync";
    int n = 1;                  // softsync's n
    int batch = 0;              // mu per learner (0: the Data layer's batch_size)
    int epochs = 1;
    std::string mode = "base";  // base | overlap
    std::string lr_modulation;  // none | average | per-gradient ("": protocol default)
    int reference_batch = 0;    // B in hardsync's alpha0 * sqrt(lambda * mu / B) (0: the Data layer's)
    std::string warm_start;
    double base_lr = 0;         // alpha0 (0: the solver's base_lr)
    int64_t seed = -1;
    int threads = 1;            // OpenMP threads per rank
    int wait_spin = -1, wait_sleep_us = -1;  // -1: chosen from the load (WaitPolicy::for_load)
    std::string output = "rudra-dist";
};
// Initialises MPI itself (MPI_THREAD_MULTIPLE); every rank runs this.
int run_dist(const DistOptions& o, int* argc, char*** argv);

}  // namespace rudra::tools
