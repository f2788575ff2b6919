// The one run loop (session/run_loop.h) with a method that only records what it is asked to do:
// where the epochs end, which checkpoints are written when and why, a stop before a step and one
// agreed within it, a resumed start, the end by steps.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "session/run_loop.h"

using namespace rudra::session;

namespace {

// A method of `per_step` samples a step; its calls are written to `log` as "step@S" (S: the
// samples before it), "epoch@E" (E: the epoch ended, "!" for the last), "save:WHY@steps", "end"
// or "end:stopped". stop_at: the step (counted from 1 in this run) after which a stop is agreed,
// when the learners stop together.
class Recorder : public RunMethod {
public:
    Recorder(int64_t per_step, bool together = false, bool keeps = true)
        : per_step_(per_step), together_(together), keeps_(keeps) {}
    bool stops_together() const override { return together_; }
    bool keeps_checkpoints() const override { return keeps_; }
    void begin(const RunPosition& at) override { log.push_back("begin@" + std::to_string(at.samples) + "/e" + std::to_string(at.epoch)); }
    StepDone step(const RunPosition& at, bool stop_asked) override {
        ++steps_;
        log.push_back("step@" + std::to_string(at.samples));
        if (stop_asked && meets_to_stop) return {0, true, 0};  // no step: the learners meet and stop
        return {per_step_, together_ && (stop_asked || steps_ == stop_at)};
    }
    bool epoch_end(const RunPosition& at, bool last) override {
        log.push_back("epoch@" + std::to_string(at.epoch) + (last ? "!" : ""));
        return at.epoch == stop_at_epoch;
    }
    bool save(CheckpointWhy why, const RunPosition& at) override {
        if (why == CheckpointWhy::Periodic && at.steps < periodic_from) {
            log.push_back("declined@" + std::to_string(at.steps));
            return false;
        }
        log.push_back(std::string("save:") + reason_name(why) + "@" + std::to_string(at.steps));
        return true;
    }
    void end(const RunPosition&, bool stopped) override { log.push_back(stopped ? "end:stopped" : "end"); }

    std::vector<std::string> log;
    int stop_at = -1;             // the step after which the learners agree to stop
    int64_t stop_at_epoch = -1;   // the epoch at whose end they agree to stop
    bool meets_to_stop = false;   // a stop request is a meeting, not a step
    int64_t periodic_from = 0;    // periodic checkpoints before this step are declined

private:
    int64_t per_step_;
    bool together_, keeps_;
    int steps_ = 0;
};

std::vector<std::string> only(const std::vector<std::string>& log, const std::string& prefix) {
    std::vector<std::string> out;
    for (const std::string& s : log)
        if (s.rfind(prefix, 0) == 0) out.push_back(s);
    return out;
}

RunPlan plan(int64_t per_epoch, int64_t total) {
    RunPlan p;
    p.samples_per_epoch = per_epoch;
    p.total_samples = total;
    return p;
}

}  // namespace

TEST_CASE("run loop: an epoch ends at the step that crosses its boundary, the last one at the run's end") {
    Recorder m(3);
    RunPlan p = plan(10, 30);
    p.checkpoint_at_epochs = true;
    p.checkpoint_at_end = true;
    const RunEnd end = run_loop(m, p);
    CHECK_FALSE(end.stopped);
    CHECK(end.at.steps == 10);
    CHECK(end.at.samples == 30);
    CHECK(end.at.epoch == 3);
    // Steps end at 3, 6, 9, 12 (epoch 1), ..., 21 (epoch 2), ..., 30 (epoch 3, the last).
    CHECK(only(m.log, "epoch") == std::vector<std::string>{"epoch@1", "epoch@2", "epoch@3!"});
    // An epoch checkpoint after every epoch but the last, whose checkpoint is the end's.
    CHECK(only(m.log, "save") == std::vector<std::string>{"save:epoch@4", "save:epoch@7", "save:end@10"});
    CHECK(m.log.front() == "begin@0/e0");
    CHECK(m.log.back() == "end");
}

TEST_CASE("run loop: a step that spans several epochs ends each of them") {
    Recorder m(25);  // samples after each step: 25 (epoch 2 of 10 ends, and 1 with it), 50, 75
    RunPlan p = plan(10, 70);
    p.checkpoint_at_epochs = true;
    const RunEnd end = run_loop(m, p);
    // The last step goes past the run's 7 epochs: it ends epochs 6 and 7, and no further one.
    CHECK(end.at.samples == 75);
    CHECK(end.at.epoch == 7);
    CHECK(only(m.log, "epoch") ==
          std::vector<std::string>{"epoch@1", "epoch@2", "epoch@3", "epoch@4", "epoch@5", "epoch@6", "epoch@7!"});
    // One checkpoint per step that ended epochs, not one per epoch.
    CHECK(only(m.log, "save") == std::vector<std::string>{"save:epoch@1", "save:epoch@2"});
    // Learners that agree to stop at an epoch's end stop there, even within a step.
    Recorder stops(25);
    stops.stop_at_epoch = 1;
    const RunEnd early = run_loop(stops, plan(10, 75));
    CHECK(only(stops.log, "epoch") == std::vector<std::string>{"epoch@1"});
    CHECK(early.stopped);
}

TEST_CASE("run loop: periodic checkpoints count from the last checkpoint, or from step 0 when aligned") {
    SUBCASE("counted from the last checkpoint of any reason") {
        Recorder m(1);
        RunPlan p = plan(5, 12);
        p.checkpoint_every.steps = 3;
        p.checkpoint_at_epochs = true;
        run_loop(m, p);
        // 3 (periodic), 5 (epoch), 8 (3 after it), 10 (epoch); none at 11 or at the end (12).
        CHECK(only(m.log, "save") ==
              std::vector<std::string>{"save:periodic@3", "save:epoch@5", "save:periodic@8", "save:epoch@10"});
    }
    SUBCASE("aligned to the run's step numbers whatever the start") {
        Recorder m(1);
        RunPlan p = plan(100, 0);
        p.total_steps = 9;
        p.start = {4, 4, 0, 0.0};
        p.checkpoint_every = {3, 0.0, true};
        p.checkpoint_at_end = true;
        run_loop(m, p);
        CHECK(only(m.log, "save") == std::vector<std::string>{"save:periodic@6", "save:end@9"});
        CHECK(only(m.log, "epoch") == std::vector<std::string>{"epoch@0!"});  // ends by steps, within epoch 1
    }
}

TEST_CASE("run loop: a periodic checkpoint the method declines is asked for again after the next step") {
    Recorder m(1);
    m.periodic_from = 5;
    RunPlan p = plan(100, 12);
    p.checkpoint_every.steps = 3;
    run_loop(m, p);
    CHECK(only(m.log, "declined") == std::vector<std::string>{"declined@3", "declined@4"});
    CHECK(only(m.log, "save") == std::vector<std::string>{"save:periodic@5", "save:periodic@8", "save:periodic@11"});
}

TEST_CASE("run loop: a stop before a step ends the run there with a signal checkpoint") {
    Recorder m(2);
    RunPlan p = plan(10, 40);
    p.checkpoint_at_end = true;
    int asked = 0;
    p.stop_requested = [&] { return ++asked == 4; };  // before the 4th step
    const RunEnd end = run_loop(m, p);
    CHECK(end.stopped);
    CHECK(end.at.steps == 3);
    CHECK(only(m.log, "step").size() == 3);
    CHECK(only(m.log, "save") == std::vector<std::string>{"save:signal@3"});
    CHECK(m.log.back() == "end:stopped");
}

TEST_CASE("run loop: learners that stop together take the step, then stop, with no periodic checkpoint") {
    Recorder m(1, true);
    m.stop_at = 4;
    RunPlan p = plan(10, 40);
    p.checkpoint_every.steps = 2;
    const RunEnd end = run_loop(m, p);
    CHECK(end.stopped);
    CHECK(end.at.steps == 4);
    CHECK(only(m.log, "save") == std::vector<std::string>{"save:periodic@2", "save:signal@4"});

    SUBCASE("a request is passed into the step") {
        Recorder asked(1, true);
        RunPlan q = plan(10, 40);
        int n = 0;
        q.stop_requested = [&] { return ++n == 2; };
        const RunEnd e = run_loop(asked, q);
        CHECK(e.at.steps == 2);  // the step of the request is taken
        CHECK(e.stopped);
    }
}

TEST_CASE("run loop: learners that meet at an epoch end may stop there; a stop that is only a meeting takes no step") {
    SUBCASE("stop agreed at the end of epoch 2 of 4") {
        Recorder m(5, true);
        m.stop_at_epoch = 2;
        RunPlan p = plan(10, 40);
        p.checkpoint_at_epochs = true;
        const RunEnd end = run_loop(m, p);
        CHECK(end.stopped);
        CHECK(end.at.samples == 20);
        // Epoch 1's checkpoint, then the stop's instead of epoch 2's.
        CHECK(only(m.log, "save") == std::vector<std::string>{"save:epoch@2", "save:signal@4"});
    }
    SUBCASE("stop agreed at the last epoch's end: stopped, as the method says (gossip: a learner stopped within it)") {
        Recorder m(5, true);
        m.stop_at_epoch = 2;
        RunPlan p = plan(10, 20);
        p.checkpoint_at_end = true;
        const RunEnd end = run_loop(m, p);
        CHECK(end.stopped);
        CHECK(only(m.log, "save") == std::vector<std::string>{"save:signal@4"});
    }
    SUBCASE("a meeting instead of a step") {
        Recorder m(1, true);
        m.meets_to_stop = true;
        RunPlan p = plan(10, 40);
        int n = 0;
        p.stop_requested = [&] { return ++n == 3; };
        const RunEnd end = run_loop(m, p);
        CHECK(end.stopped);
        CHECK(end.at.steps == 2);
        CHECK(end.at.samples == 2);
    }
}

TEST_CASE("run loop: a requested checkpoint, a resumed start, a rank that keeps no checkpoints") {
    SUBCASE("request") {
        Recorder m(1);
        RunPlan p = plan(10, 5);
        int n = 0;
        p.snapshot_requested = [&] { return ++n == 2; };
        run_loop(m, p);
        CHECK(only(m.log, "save") == std::vector<std::string>{"save:request@2"});
    }
    SUBCASE("resumed within epoch 2") {
        Recorder m(5);
        RunPlan p = plan(10, 30);
        p.start = {3, 15, 0, 12.0};
        const RunEnd end = run_loop(m, p);
        CHECK(m.log.front() == "begin@15/e1");
        CHECK(only(m.log, "epoch") == std::vector<std::string>{"epoch@2", "epoch@3!"});
        CHECK(end.at.steps == 6);
    }
    SUBCASE("no checkpoints") {
        Recorder m(1, false, false);
        RunPlan p = plan(2, 6);
        p.checkpoint_at_epochs = p.checkpoint_at_end = true;
        p.checkpoint_every.steps = 1;
        run_loop(m, p);
        CHECK(only(m.log, "save").empty());
        CHECK(only(m.log, "epoch").size() == 3);
    }
}

TEST_CASE("run loop: an epoch of no samples is refused") {
    Recorder m(1);
    CHECK_THROWS_AS(run_loop(m, plan(0, 10)), std::logic_error);
}
