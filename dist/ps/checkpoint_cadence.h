// When a periodic checkpoint is due, for the parameter server and the decentralized methods
// alike: every `steps` steps (the PS's updates) or `seconds` seconds since the last checkpoint,
// whichever comes first.
#pragma once
#include <cstdint>

namespace rudra::dist {

// --checkpoint-every: "N" steps, "Ns" seconds, "Nm" minutes; 0 in a field: never by that measure.
struct CheckpointEvery {
    int64_t steps = 0;
    double seconds = 0.0;
};

class CheckpointCadence {
public:
    explicit CheckpointCadence(CheckpointEvery every = {}) : every_(every) {}
    // A checkpoint (of any reason) was written at `step`, `at_s` seconds into the run.
    void written(int64_t step, double at_s) {
        step_ = step;
        at_s_ = at_s;
    }
    bool due(int64_t step, double now_s) const {
        return (every_.steps > 0 && step - step_ >= every_.steps) || (every_.seconds > 0 && now_s - at_s_ >= every_.seconds);
    }

private:
    CheckpointEvery every_;
    int64_t step_ = 0;
    double at_s_ = 0.0;
};

}  // namespace rudra::dist
