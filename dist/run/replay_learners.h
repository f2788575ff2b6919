// The learners of a replay (dist/run/replay.cpp): each a session of its own, with its seed and its
// sample stream as in the run, and the recorded gradients computed ahead of their turn.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <vector>

#include "data/batch_stream.h"
#include "dist/ps/schedule_record.h"
#include "dist/run/roles.h"
#include "dist/transport/wire.h"
#include "session/training_session.h"

namespace rudra::dist::run {

// A learner of the replay: its own nets (its dropout stream) and sample stream, as in the run,
// from `position` (its gradients before; a resumed replay's learners start where they were).
struct ReplayLearner {
    ReplayLearner(const Setup& s, const data::TrainTest& sets, int index, int decode_threads, int64_t position);
    session::TrainingSession run;
    data::Prefetcher stream;
    std::vector<char> message;  // its weights and gradients as BF16 messages (--wire bf16)
};

// The recorded gradients from event `from` on, computed ahead of their turn and side by side
// where the run's learners computed with one thread each (the bits depend on the threads, not on
// which core): a learner's next gradient starts as soon as the weights version it needs exists
// and its previous one has been taken, on every core the process may use. The rule still takes
// them in the record's order.
class ComputedAhead {
public:
    // With Wire::Bf16 each learner computes on the weights rounded as the PS's reply rounded
    // them, and its gradient is rounded as its message to the PS was.
    ComputedAhead(const std::vector<ScheduleEvent>& events, size_t from, int learners, int threads, Wire wire,
                  std::function<ReplayLearner&(int)> learner);
    ~ComputedAhead();  // waits for the gradients still being computed
    ReplayLearner& learner(int l) { return learner_(l); }
    // The loss of event i's gradient (then in its learner's gradient buffer until the next call for
    // that learner), computed on `weights` unless it was started ahead.
    double take(size_t i, const float* weights);
    // Starts the gradients of the events from `from` on (a window ahead) whose weights exist.
    void start_ready(size_t from, const std::function<const float*(int64_t)>& weights_of);

private:
    void start(size_t l, const float* weights);

    const std::vector<ScheduleEvent>& events_;
    std::function<ReplayLearner&(int)> learner_;
    std::vector<std::deque<size_t>> next_;  // each learner's gradient events not yet taken
    std::vector<std::future<double>> running_;
    int workers_, threads_, in_flight_ = 0;
    Wire wire_;
};

}  // namespace rudra::dist::run
