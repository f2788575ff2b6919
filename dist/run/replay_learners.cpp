#include "dist/run/replay_learners.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace rudra::dist::run {

namespace {

session::SessionSpec learner_spec(const Setup& s, int index) {
    session::SessionSpec spec = s.spec;
    spec.seed = s.spec.seed + static_cast<uint64_t>(kFirstLearner + index);  // as a learner's session
    return spec;
}

// The cores this process may run on (a batch job's share of its node, not the node's count).
int usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

ReplayLearner::ReplayLearner(const Setup& s, const data::TrainTest& sets, int index, int decode_threads,
                             int64_t position)
    : run(learner_spec(s, index), sets, {.train_net = true, .test_net = false, .solver = false}),
      stream(sets.train, run.train_transform(), run.batch(), sample_stream_seed(s.spec.seed, kFirstLearner + index),
             static_cast<uint64_t>(position) * static_cast<uint64_t>(run.batch()), {}, decode_threads,
             sets.skipped.get()) {
    run.skip_passes(static_cast<uint64_t>(position));
}

ComputedAhead::ComputedAhead(const std::vector<ScheduleEvent>& events, size_t from, int learners, int threads,
                             Wire wire, std::function<ReplayLearner&(int)> learner)
    : events_(events), learner_(std::move(learner)), next_(static_cast<size_t>(learners)),
      running_(static_cast<size_t>(learners)),
      workers_(threads == 1 ? usable_cores() : 0),
      threads_(threads), wire_(wire) {
    for (size_t i = from; i < events.size(); ++i)
        if (events[i].kind == ScheduleEvent::Kind::Gradient) next_[static_cast<size_t>(events[i].learner)].push_back(i);
}

ComputedAhead::~ComputedAhead() {
    for (auto& f : running_)
        if (f.valid()) f.wait();
}

double ComputedAhead::take(size_t i, const float* weights) {
    const auto l = static_cast<size_t>(events_[i].learner);
    if (next_[l].empty() || next_[l].front() != i) throw std::logic_error("replay: gradients taken out of order");
    if (!running_[l].valid()) start(l, weights);
    next_[l].pop_front();
    --in_flight_;
    return running_[l].get();
}

void ComputedAhead::start_ready(size_t from, const std::function<const float*(int64_t)>& weights_of) {
    for (size_t j = from; j < events_.size() && j < from + 4 * static_cast<size_t>(workers_) && in_flight_ < workers_;
         ++j) {
        const ScheduleEvent& e = events_[j];
        if (e.kind != ScheduleEvent::Kind::Gradient) continue;
        const auto l = static_cast<size_t>(e.learner);
        if (running_[l].valid() || next_[l].empty() || next_[l].front() != j) continue;
        if (const float* w = weights_of(e.version)) start(l, w);
    }
}

void ComputedAhead::start(size_t l, const float* weights) {
    ReplayLearner& learner = learner_(static_cast<int>(l));  // built here, on this thread
    const int threads = threads_;
    const Wire wire = wire_;
    running_[l] = std::async(std::launch::async, [&learner, weights, threads, wire] {
        omp_set_num_threads(threads);
        nn::ParamStore& p = learner.run.params();
        std::memcpy(p.values(), weights, sizeof(float) * p.size());
        wire_round_trip(wire, p.values(), p.size(), learner.message);
        const double loss = learner.run.compute_gradient(learner.stream.next());
        wire_round_trip(wire, p.grads(), p.size(), learner.message);
        return loss;
    });
    ++in_flight_;
}

}  // namespace rudra::dist::run
