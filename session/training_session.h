// One model being trained: its nets (a TRAIN net for the steps, a TEST net sharing its parameters
// for evaluation), the input transforms of their Data layers, an optional solver, and what every
// mode does with them: compute a gradient (a step when there is a solver), evaluate, snapshot and
// restore. `rudra train`, `rudra test`, every learner, the parameter server and the statistics
// server are built on it; nothing here knows about MPI.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/batch_stream.h"
#include "data/dataset.h"
#include "data/transform.h"
#include "nn/kernel_options.h"
#include "nn/net.h"
#include "nn/net_spec.h"
#include "nn/snapshot.h"
#include "nn/solver.h"
#include "nn/solver_spec.h"
#include "session/conv_choices.h"

namespace rudra::session {

struct SessionSpec {
    nn::SolverSpec solver;  // with the command line's overrides applied
    nn::NetSpec net;
    nn::KernelOptions kernels;
    int batch = 0;       // the TRAIN net's mini-batch (0: its Data layer's batch_size)
    int test_batch = 0;  // the TEST net's (0: its Data layer's, or the TRAIN one's when it has none)
    uint64_t seed = 1;   // weight initialisation and the nets' random streams (dropout)
};

// The parts a role builds: the parameter server needs no TEST net, the statistics server no
// TRAIN net, a learner no solver (unless its method takes local steps).
struct SessionParts {
    bool train_net = true;
    bool test_net = false;
    bool solver = false;
};

struct EvalResult {
    double accuracy = 0.0, loss = 0.0;
    double top5 = -1.0;  // top-5 accuracy; -1 when the net has fewer than 5 classes
    int64_t images = 0;
    // Each Accuracy layer of the test net (its top's name, its top_k), over the real images.
    struct Layer {
        std::string name;
        int top_k = 1;
        double accuracy = 0.0;
    };
    std::vector<Layer> layers;
};

// A loss that is not finite: training diverged.
class Diverged : public std::runtime_error {
public:
    Diverged(double loss, const std::string& what) : std::runtime_error(what), loss_(loss) {}
    double loss() const { return loss_; }

private:
    double loss_;
};

class TrainingSession {
public:
    // `sets` is the data set the nets are shaped for and evaluated on; it must outlive the session.
    TrainingSession(const SessionSpec& spec, const data::TrainTest& sets, SessionParts parts);
    ~TrainingSession();

    nn::ParamStore& params();
    const nn::ParamStore& params() const;
    nn::Net& train_net();  // these three throw std::logic_error when the part was not built
    nn::Net& test_net();
    nn::Solver& solver();
    const nn::SolverSpec& solver_spec() const { return spec_.solver; }
    int batch() const;  // the TRAIN net's mini-batch
    const data::Transform& train_transform() const { return train_tf_; }
    // Notes on accepted-but-ignored fields and the transforms, for the log.
    const std::vector<std::string>& notes() const { return notes_; }
    // The kernel options with what each `auto` layer chose written out, for a process that builds
    // the same net and should take the same backends without measuring them again.
    nn::KernelOptions resolved_kernels() const { return choices_.resolved(spec_.kernels); }

    // The gradient of one mini-batch into params().grads() (zeroed first); returns the loss.
    // Throws Diverged when the loss is not finite.
    double compute_gradient(const data::Batch& batch);
    // The same, calling after_layer(i) as each layer's backward pass ends (nn::Net::backward).
    double compute_gradient(const data::Batch& batch, const std::function<void(size_t layer)>& after_layer);
    // The TRAIN net's random streams as after `gradients` gradients: a learner that starts at a
    // position of its sample stream other than the first draws its dropout masks from there too.
    void skip_passes(uint64_t gradients) { train_net().skip_passes(gradients); }
    // compute_gradient, then the solver's update as iteration `iteration` of its schedule.
    double step(const data::Batch& batch, int64_t iteration);
    // Top-1 and top-5 accuracy, each Accuracy layer's, and the mean cross-entropy of the current
    // parameters over the whole test set.
    EvalResult evaluate();

    // The parameters, the solver history (when there is a solver) and the data position.
    nn::Snapshot snapshot(uint64_t iteration, uint64_t samples_seen, uint64_t data_seed) const;
    // What to do with a snapshot's solver history: it must match (resuming), it is taken when it
    // matches (a warm start), or it is not wanted (testing).
    enum class History { Required, IfMatching, Ignored };
    // Takes the snapshot's parameters (and history, as `history` says); errors name `source`.
    void restore(const nn::Snapshot& snapshot, const std::string& source, History history);

private:
    SessionSpec spec_;
    const data::TrainTest& sets_;
    ConvChoices choices_;  // answers the nets' `auto` layers (declared before the nets)
    std::vector<std::string> notes_;
    data::Transform train_tf_, test_tf_;
    std::unique_ptr<nn::Net> train_net_, test_net_;
    std::unique_ptr<nn::Solver> solver_;
};

// OUTDIR/<prefix>_iter_N.rudra, the snapshot_prefix's file name only ("snapshot" when empty).
std::string snapshot_path(const std::string& dir, const std::string& prefix, int64_t iteration);

}  // namespace rudra::session
