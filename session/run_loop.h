// The one run loop every training method shares: it owns the life cycle (where the run stands
// in samples, steps and epochs, the epoch ends, the epoch, periodic, requested and stopping
// checkpoints, the stop request, the end), and a method is a strategy on it: its step and
// exchange, what it does at an epoch end, how it saves a checkpoint. The single-node run
// (session/single_node_run.h), the parameter server (dist/ps/parameter_server.h), the all-reduce
// learner (dist/methods/allreduce.h) and the gossip learner (dist/methods/gossip.h) run on it.
#pragma once
#include <cstdint>
#include <functional>

namespace rudra::session {

// --checkpoint-every: "N" steps, "Ns" seconds, "Nm" minutes; 0 in a field: never by that measure.
// aligned: every `steps`-th step of the whole run (a solver's `snapshot: N`, counted from
// iteration 0 whatever the start), instead of `steps` steps after the last checkpoint.
struct CheckpointEvery {
    int64_t steps = 0;
    double seconds = 0.0;
    bool aligned = false;
};

// When a periodic checkpoint is due: every `steps` steps or `seconds` seconds since the last
// checkpoint (of any reason), whichever comes first.
class CheckpointCadence {
public:
    explicit CheckpointCadence(CheckpointEvery every = {}) : every_(every) {}
    // A checkpoint was written at `step`, `at_s` seconds into the run.
    void written(int64_t step, double at_s) {
        step_ = step;
        at_s_ = at_s;
    }
    bool due(int64_t step, double now_s) const {
        const bool by_steps =
            every_.steps > 0 && (every_.aligned ? step % every_.steps == 0 : step - step_ >= every_.steps);
        return by_steps || (every_.seconds > 0 && now_s - at_s_ >= every_.seconds);
    }

private:
    CheckpointEvery every_;
    int64_t step_ = 0;
    double at_s_ = 0.0;
};

// Where a run stands: the method's steps (mini-batches, the PS's updates, synchronous steps of
// all learners) and the samples trained on by all learners, both counted from the run's first
// start (a gossip learner counts its own local steps as samples: its epoch is its share); the
// epochs completed; the seconds since the first start.
struct RunPosition {
    int64_t steps = 0;
    int64_t samples = 0;
    int64_t epoch = 0;
    double elapsed_s = 0.0;
};

enum class CheckpointWhy { Epoch, Periodic, Request, Signal, End };
// The reason a checkpoint's metadata records: "epoch", "periodic", "request", "signal", "end".
const char* reason_name(CheckpointWhy why);

// What one step did: the samples it trained on (all learners'), and for a method whose learners
// stop together, whether they agreed to stop after it. steps: 0 for a call that only met the
// other learners to stop (gossip's learner asked to stop within an epoch).
struct StepDone {
    int64_t samples = 0;
    bool stop = false;
    int64_t steps = 1;
};

// A training method's part in the loop.
class RunMethod {
public:
    virtual ~RunMethod() = default;
    // True when a stop request is passed into step() for the learners to agree on (they stop
    // together after the same step); false: the run stops before its next step.
    virtual bool stops_together() const { return false; }
    // Once, before the first step.
    virtual void begin(const RunPosition&) {}
    // One step and its exchange, from `at`. `stop_asked`: this rank's stop request (only when
    // stops_together()).
    virtual StepDone step(const RunPosition& at, bool stop_asked) = 0;
    // After every step, with the position after it (its epoch too, when the step ended one).
    virtual void after_step(const RunPosition&, bool /*epoch_ends*/) {}
    // After the step that ends an epoch (or the run): a test pass, the epoch's weights out.
    // Returns true when the learners, meeting there, agreed to stop the run short of its end.
    virtual bool epoch_end(const RunPosition&, bool /*last*/) { return false; }
    // Whether this rank writes the run's checkpoints.
    virtual bool keeps_checkpoints() const { return true; }
    // Writes a checkpoint; false when it cannot be written now (a periodic checkpoint the
    // parameter server holds back until the statistics server has logged the last epoch): the
    // loop asks again after the next step.
    virtual bool save(CheckpointWhy why, const RunPosition& at) = 0;
    // After the loop: stopped before the end (after the Signal checkpoint) or not.
    virtual void end(const RunPosition&, bool /*stopped*/) {}
};

struct RunPlan {
    int64_t samples_per_epoch = 0;
    int64_t total_samples = 0;
    int64_t total_steps = 0;        // when > 0, the run ends after this step instead (a solver's max_iter)
    RunPosition start;              // a fresh run's zeros, or where a resumed one stopped
    double elapsed_offset_s = 0.0;  // a resumed run's seconds before this start
    CheckpointEvery checkpoint_every;
    bool checkpoint_at_epochs = false;  // an Epoch checkpoint after each epoch but the last
    bool checkpoint_at_end = false;     // an End checkpoint when the run completes
    // Asked before each step; snapshot_requested after it (a Request checkpoint, the run goes on).
    std::function<bool()> stop_requested, snapshot_requested;
};

struct RunEnd {
    RunPosition at;
    bool stopped = false;  // before the end
};

// Runs `method` from plan.start to the plan's end, or a stop.
RunEnd run_loop(RunMethod& method, const RunPlan& plan);

}  // namespace rudra::session
