// The subcommands of `rudra`. Each returns the process exit code; errors are thrown as
// exceptions whose message names the file and the problem, and main() prints them.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "dist/transport/transport.h"
#include "nn/kernel_options.h"
#include "session/data_setup.h"

namespace rudra::tools {

using session::DataOptions;

struct TrainOptions {
    std::string solver;
    DataOptions data;
    double epochs = 0;   // 0: the solver's max_iter
    int batch = 0;       // 0: the Data layer's batch_size
    int64_t seed = -1;   // -1: the solver's random_seed, else 1
    std::string output;  // metrics and snapshots
    std::string resume;  // snapshot to continue from
    bool overwrite = false;  // replace another run's files in `output` (a fresh run refuses them)
    nn::KernelOptions kernels;  // --conv-backend
    std::string bind = "auto";  // on | auto | off (bind_threads)
};
int run_train(const TrainOptions& o);

struct TestOptions {
    std::string model;  // solver or net prototxt
    std::string snapshot;
    DataOptions data;
    int batch = 0;
    nn::KernelOptions kernels;  // --conv-backend
};
int run_test(const TestOptions& o);

struct TimeOptions {
    std::string model;
    int batch = 0;
    int iterations = 10;
    std::string input_shape;  // "C,H,W" for nets with a Data layer
    std::string phase = "train";
    std::string json;         // optional JSON-lines output file
    nn::KernelOptions kernels;  // --conv-backend
};
int run_time(const TimeOptions& o);

struct InfoOptions {
    int ranks = 1;         // ranks on this node to plan for
    int threads = 0;       // threads per rank (0: the OpenMP setting)
    std::string topology;  // hwloc synthetic description instead of this machine's
};
int run_info(const InfoOptions& o);

// --bind: "on" pins this rank's OpenMP threads and memory to its share of the node (plan of
// `ranks_on_node` ranks); "auto" does so only when the node is not oversubscribed (ranks x threads
// <= PUs); "off" leaves placement to the OS.
struct Binding {
    std::string message;                 // a line for the log ("" when off)
    std::function<void()> helper_thread;  // run first on a helper thread: binds it to the rank's PUs
};
Binding bind_threads(const std::string& mode, int ranks_on_node, int rank_on_node, int threads);

struct BenchOptions {
    std::vector<std::string> problems;     // descriptor strings
    std::vector<std::string> batch_files;  // files of descriptors
    std::vector<int> minibatches;          // sweep the conv problems' mb (empty: as written)
    std::vector<std::string> backends{"own", "blis", "onednn", "openblas"};
    std::vector<int> threads;              // thread counts (empty: the OpenMP setting)
    std::vector<std::string> passes{"fwd", "bwd_data", "bwd_weights"};  // convolution passes
    std::string format = "table";          // table | csv | jsonl
    std::string output;                    // file for csv / jsonl (default stdout)
    double min_time = 0.2;                 // seconds of timing per problem and backend
};
int run_bench(const BenchOptions& o);

struct DistOptions {
    std::string solver;
    DataOptions data;
    std::string protocol = "softsync";
    int n = 1;                  // softsync's n
    int batch = 0;              // mu per learner (0: the Data layer's batch_size)
    int epochs = 1;
    std::string mode = "base";  // base | overlap
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
    std::string checkpoint_every = "600s";  // N updates or Ns seconds between checkpoints; 0: none
    double peer_timeout = dist::kDefaultPeerTimeoutS;   // seconds of silence after which a rank is lost
    double startup_timeout = 600;  // seconds from a rank's start to training (every rank set up)
    bool overwrite = false;     // replace another run's files in `output` (a fresh run refuses them)
    int tau = 1;                // EASGD, gossip: local steps between exchanges (with the centre, or a peer)
    double beta = 0;            // EASGD: moving rate in (0, 1] (0: 0.9 / learners)
    std::string straggler;      // RANK:FACTOR: that learner's compute is slowed FACTOR times ("": none)
    std::string timeline;       // a Chrome-trace file of every rank's spans ("": none)
    std::string ps_receive_ahead = "off";  // on | off: the PS receives the next message while it updates
    std::string node_data_dir = "/dev/shm";  // where a node's ranks share one copy of the data ("": none)
    bool json = false;          // the metrics lines on stdout as JSON, instead of readable lines
    std::string progress = "auto";  // auto | bar | lines | off: progress within an epoch
    std::string topology = "base";  // base | adv | adv* (dist/ps/topology.h)
    int ranks_per_node = 0;     // adv: emulated nodes of this many consecutive ranks (0: the real nodes)
    int fan_out = 0;            // adv: leaf PSs below each parent (0: all below the root)
    int broadcast_fan_out = 2;  // adv*: learners each forwards the weights to
    std::set<std::string> given;  // options on the command line ("--protocol", "solver"): a resume keeps the rest
};
// `rudra convert`: images (a folder of class folders or an ImageData list) into an LMDB of
// Caffe Datums, as Caffe's convert_imageset.
struct ConvertOptions {
    std::string input, output, root;  // root: the list's root folder
    bool gray = false, encoded = false, shuffle = false;
    int new_height = 0, new_width = 0;
    uint64_t seed = 1;
};
int run_convert(const ConvertOptions& o);
// `rudra mean`: a set's mean image as a Caffe mean file, as compute_image_mean.
struct MeanOptions {
    std::string input, output, root;
    bool gray = false;
    int new_height = 0, new_width = 0;
};
int run_mean(const MeanOptions& o);
// `rudra input`: the input pipeline alone (read, decode, crop, mirror, mean), in images/s.
struct InputOptions {
    std::string input, root;
    bool gray = false, mirror = false;
    int new_height = 0, new_width = 0, crop = 0, batch = 128, batches = 20, decode_threads = 1;
    float scale = 1.0f;
    std::vector<float> mean_values;
};
int run_input(const InputOptions& o);

// `rudra checkpoint`: a distributed run's checkpoint, described.
struct CheckpointOptions {
    std::string path;   // a checkpoint, or the output directory holding one
    std::string field;  // print only this field's value ("": the whole JSON line)
};
int run_checkpoint(const CheckpointOptions& o);

// Initialises MPI itself (MPI_THREAD_MULTIPLE); every rank runs this.
int run_dist(const DistOptions& o, int* argc, char*** argv);

}  // namespace rudra::tools
