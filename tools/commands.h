// The subcommands of `rudra`. Each returns the process exit code; errors are thrown as
// exceptions whose message names the file and the problem, and main() prints them.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "dist/run/options.h"
#include "nn/kernel_options.h"
#include "placement/binding.h"
#include "session/data_setup.h"

namespace rudra::tools {

using session::DataOptions;
using dist::run::DistOptions;
using placement::Binding;
using placement::bind_threads;

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


}  // namespace rudra::tools
