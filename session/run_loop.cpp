#include "session/run_loop.h"

#include <algorithm>
#include <stdexcept>

#include "base/clock.h"

namespace rudra::session {

const char* reason_name(CheckpointWhy why) {
    switch (why) {
        case CheckpointWhy::Epoch: return "epoch";
        case CheckpointWhy::Periodic: return "periodic";
        case CheckpointWhy::Request: return "request";
        case CheckpointWhy::Signal: return "signal";
        case CheckpointWhy::End: return "end";
    }
    return "?";
}

RunEnd run_loop(RunMethod& m, const RunPlan& p) {
    if (p.samples_per_epoch <= 0) throw std::logic_error("run_loop: an epoch of no samples");
    const auto started = std::chrono::steady_clock::now();
    const auto elapsed = [&] { return p.elapsed_offset_s + seconds_since(started); };
    const auto done = [&](const RunPosition& at) {
        return p.total_steps > 0 ? at.steps >= p.total_steps : at.samples >= p.total_samples;
    };
    const bool keeps = m.keeps_checkpoints();
    RunPosition at = p.start;
    at.epoch = at.samples / p.samples_per_epoch;
    at.elapsed_s = elapsed();
    CheckpointCadence cadence(p.checkpoint_every);
    cadence.written(at.steps, at.elapsed_s);
    const auto save = [&](CheckpointWhy why) {
        if (m.save(why, at)) cadence.written(at.steps, at.elapsed_s);
    };
    m.begin(at);
    bool stopped = false;
    while (!done(at)) {
        const bool asked = p.stop_requested && p.stop_requested();
        if (asked && !m.stops_together()) {
            stopped = true;
            break;
        }
        const StepDone d = m.step(at, asked);
        const int64_t before = at.samples;
        at.steps += d.steps;
        at.samples += d.samples;
        at.elapsed_s = elapsed();
        const bool last = done(at);
        const bool epoch_ends = at.samples / p.samples_per_epoch != before / p.samples_per_epoch || last;
        // Samples past the run's end (a last sum of many gradients) start no further epoch.
        if (epoch_ends)
            at.epoch = (p.total_steps > 0 ? at.samples : std::min(at.samples, p.total_samples)) / p.samples_per_epoch;
        m.after_step(at, epoch_ends);
        bool saved = false, stop_here = false;
        if (epoch_ends) {
            // A step may span several epochs (a leaf PS's sum of many gradients, sent after a
            // slow start): each ends, so that no epoch's line is missing.
            // (A run ended by steps may end within its epoch: that epoch is the one ended.)
            RunPosition crossed = at;
            for (crossed.epoch = std::min(before / p.samples_per_epoch + 1, at.epoch);
                 crossed.epoch <= at.epoch && !stop_here; ++crossed.epoch)
                stop_here = m.epoch_end(crossed, last && crossed.epoch == at.epoch);
            if (p.checkpoint_at_epochs && keeps && !last && !stop_here) {
                save(CheckpointWhy::Epoch);
                saved = true;
            }
        }
        const bool requested = p.snapshot_requested && p.snapshot_requested();
        if (keeps && !last && !d.stop && !stop_here && !saved && (requested || cadence.due(at.steps, at.elapsed_s)))
            save(requested ? CheckpointWhy::Request : CheckpointWhy::Periodic);
        if (d.stop || stop_here) {
            stopped = stop_here || !last;  // agreed within the last step, the run is complete
            break;
        }
    }
    at.elapsed_s = elapsed();
    if (keeps && (stopped || p.checkpoint_at_end)) save(stopped ? CheckpointWhy::Signal : CheckpointWhy::End);
    m.end(at, stopped);
    return {at, stopped};
}

}  // namespace rudra::session
