// What every method's loop is told of the run around it, the parameter server's and each
// decentralized learner's alike: where the statistics server is, how long the run is and where a
// resumed run starts. Each method's configuration adds its own settings to it.
#pragma once
#include <cstdint>

namespace rudra::dist {

class Timeline;

struct RunCommon {
    int stats_rank = 1;
    int64_t samples_per_epoch = 0;  // the training set: an epoch is this many samples trained on
    int64_t epochs = 1;             // the total, counting those before a warm start or a resume
    double elapsed_offset_s = 0.0;  // a resumed run's time before this start
    // A resumed run whose checkpoint lies on an epoch boundary sends that epoch's weights again
    // (marked as a replay), in case the statistics server had not logged it before the run stopped.
    bool replay_epoch = false;
    Timeline* timeline = nullptr;  // --timeline: this rank's spans
};

}  // namespace rudra::dist
