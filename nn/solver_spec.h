// A Caffe solver file: the net to train and the optimisation settings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rudra::nn {

enum class SolverType { SGD, Nesterov, AdaGrad };

struct LrPolicy {
    std::string name = "fixed";  // fixed | step | multistep | inv | exp | poly
    double base_lr = 0.01, gamma = 0.1, power = 1.0;
    int64_t stepsize = 0, max_iter = 0;
    std::vector<int64_t> stepvalues;

    double rate(int64_t iter) const;
};

struct SolverSpec {
    std::string file;
    std::string net;  // resolved path of the net prototxt
    LrPolicy lr;
    double momentum = 0.0, weight_decay = 0.0, delta = 1e-8;
    SolverType type = SolverType::SGD;
    int64_t max_iter = 0, test_iter = 0, test_interval = 0, display = 0, snapshot = 0;
    std::string snapshot_prefix;
    int64_t random_seed = -1;  // -1: not set
    std::vector<std::string> notes;  // fields accepted but ignored
};

const char* solver_type_name(SolverType t);

// Strict: unknown fields and bad values are errors naming the file and line. A relative net
// path is taken from the working directory when it exists there (Caffe's habit), otherwise from
// the solver file's directory, otherwise as the bare file name in the solver's directory.
SolverSpec load_solver_spec(const std::string& path);
// A prototxt with a top-level `net:`, `train_net:` or `base_lr:` is a solver; anything else a net.
bool is_solver_file(const std::string& path);
SolverSpec parse_solver_spec(const std::string& text, const std::string& file);

}  // namespace rudra::nn
