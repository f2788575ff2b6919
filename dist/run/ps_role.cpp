// The parameter server's rank of a `rudra dist` job under hardsync, softsync, async and EASGD (and
// the root of adv and adv*'s trees): its session and update rule, checkpoints, the final snapshot
// and staleness file, and the end of the job when a learner is lost.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "base/clock.h"
#include "dist/ps/parameter_server.h"
#include "dist/ps/schedule_record.h"
#include "dist/ps/update_rule.h"
#include "dist/run/checkpoint.h"
#include "dist/run/roles.h"
#include "dist/transport/mpi_transport.h"
#include "nn/atomic_file.h"
#include "session/exit_codes.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

// The update rule's settings: the learning-rate modulation, hardsync's alpha0 * sqrt(c mu / B)
// (c the gradients an update averages: lambda, less the backups), momentum compensation, where a
// warm start begins.
dist::UpdateRuleConfig rule_config(const DistOptions& o, const Setup& s, const dist::Protocol& protocol, int batch) {
    dist::UpdateRuleConfig rc;
    rc.modulation =
        o.lr_modulation.empty() ? protocol.default_modulation() : dist::parse_lr_modulation(o.lr_modulation);
    rc.batch = batch * (protocol.elastic() ? o.tau : 1);  // EASGD: one difference per tau mini-batches
    rc.momentum_compensation = o.momentum_compensation;
    rc.start_samples = s.start_samples;
    rc.max_staleness = o.max_staleness;
    rc.reference_batch = o.reference_batch > 0 ? o.reference_batch : s.train_layer().batch_size;
    if (protocol.synchronous())
        rc.base_scale =
            static_cast<float>(dist::synchronous_lr_scale(protocol.gradients_per_update(), rc.batch, rc.reference_batch));
    return rc;
}

namespace {

// The PS's place in the layout (its learners, leaf PSs and broadcast children) and the run's
// length, timeouts and checkpoint cadence.
dist::PsConfig ps_config(const DistOptions& o, const Setup& s, int64_t samples_per_epoch) {
    dist::PsConfig pc;
    pc.timeline = s.timeline;
    pc.learner_ranks = s.layout.learners();
    for (int child : s.layout.children(kPsRank))
        if (s.layout.role(child) == dist::RankLayout::Role::Relay)
            pc.relays.push_back({child, s.layout.learners_below(child)});
    pc.broadcast_children = s.layout.broadcast_children(kPsRank);
    pc.stats_rank = kStatsRank;
    pc.samples_per_epoch = samples_per_epoch;
    pc.epochs = o.epochs;
    pc.peer_timeout_s = o.peer_timeout;
    pc.receive_ahead = o.ps_receive_ahead;
    pc.wire = dist::wire_named(o.wire);
    pc.checkpoint_every = parse_checkpoint_every(o.checkpoint_every);
    return pc;
}

void say_resumed(const DistCheckpoint& ck, const dist::UpdateRule& rule, int lambda) {
    say("PS: resuming from " + ck.path + " (" + ck.meta.value("reason", std::string("?")) + " checkpoint of " +
        ck.meta.value("written_at", std::string("?")) + "): epoch " + std::to_string(ck.epoch()) + ", update " +
        std::to_string(rule.timestamp()) + ", " + std::to_string(rule.samples()) + " samples" +
        (ck.learners() != lambda
             ? ", with " + std::to_string(lambda) + " learners instead of " + std::to_string(ck.learners())
             : std::string()));
}

struct PsFiles {
    std::string checkpoint, snapshot, staleness;
};

// The run's last words, and its exit code. A lost rank may be stopped rather than dead: only
// ending the whole job frees mpiexec, and MPI_Finalize would wait for it forever.
int end_of_run(const DistOptions& o, const dist::PsResult& r, const dist::StalenessStats& staleness, const PsFiles& f,
               dist::MpiSession& mpi) {
    if (r.end == dist::PsResult::End::Finished) {
        std::printf("PS: %lld updates, %lld gradients (%lld more arrived after the last epoch and were dropped), "
                    "staleness mean %.3f max %lld, %.1f s; snapshot %s, staleness %s\n",
                    static_cast<long long>(r.updates), static_cast<long long>(staleness.gradients()),
                    static_cast<long long>(r.dropped_gradients), staleness.mean(),
                    static_cast<long long>(staleness.max()), r.elapsed_s, f.snapshot.c_str(), f.staleness.c_str());
    } else {
        std::printf("PS: stopped at update %lld after %.1f s: %s. The newest checkpoint is %s; %s%s\n",
                    static_cast<long long>(r.updates), r.elapsed_s, r.why.c_str(), f.checkpoint.c_str(),
                    resume_hint(o.output).c_str(),
                    r.end == dist::PsResult::End::LearnerLost ? " (with as many learners as answer)" : "");
    }
    std::fflush(stdout);
    const int code = r.end == dist::PsResult::End::Finished   ? 0
                     : r.end == dist::PsResult::End::Stopped ? session::kExitStopped
                                                             : session::kExitLearnerLost;
    if (!r.lost_ranks.empty()) {
        std::vector<int> lost = r.lost_ranks;  // in rank order: the order they were noticed in varies
        std::sort(lost.begin(), lost.end());
        std::string ranks;
        for (int rank : lost) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
        say("PS: ending the job (rank " + ranks + " lost) with exit code " + std::to_string(code));
        mpi.peer_lost();
        dist::MpiSession::end_job(code);
    }
    return code;
}

}  // namespace

int run_ps_role(const RoleContext& c) {
    const DistOptions& o = c.o;
    const Setup& s = c.s;
    const dist::Protocol& protocol = c.protocol;
    const data::TrainTest& sets = c.sets;
    const int lambda = protocol.learners();
    session::SessionSpec spec = s.spec;
    spec.kernels.conv = "own";  // the PS's net only holds the parameters: no backend to choose
    session::TrainingSession run(spec, sets, {.train_net = true, .test_net = false, .solver = true});
    s.release_train_images();
    if (s.resume) {
        run.restore(s.resume->snapshot, s.resume->path, session::TrainingSession::History::Required);
    } else if (!o.warm_start.empty()) {
        run.restore(s.warm, o.warm_start, session::TrainingSession::History::IfMatching);
    }
    nn::ParamStore& params = run.params();
    const dist::UpdateRuleConfig rc = rule_config(o, s, protocol, run.batch());
    dist::UpdateRule rule(protocol, run.solver(), params, lambda, rc);
    // The schedule of a run from its start, where the PS adds each gradient itself (not a relayed
    // sum): `rudra dist --replay` computes such a run again.
    std::optional<dist::ScheduleRecord> schedule;
    if (!s.resume && s.layout.topology() == dist::Topology::Base && !protocol.elastic()) {
        schedule.emplace(lambda);
        rule.record_into(&*schedule);
    }
    const std::string schedule_file = dist::schedule_path(o.output);
    const nlohmann::ordered_json schedule_header = {{"settings", run_settings(o, lambda)},
                                                    {"cwd", fs::current_path().string()},
                                                    {"threads", o.threads},
                                                    {"conv_backend", o.kernels.conv},
                                                    {"sgemm", sgemm_identity()}};
    dist::PsConfig pc = ps_config(o, s, static_cast<int64_t>(sets.train.size()));
    pc.replay_epoch = replays_epoch(s, pc.samples_per_epoch);
    pc.elapsed_offset_s = s.elapsed_offset_s();

    const std::string ck_path = checkpoint_path(o.output);
    const std::string snap_path = final_snapshot_path(o.output);
    const std::string stale_path = (fs::path(o.output) / "staleness.json").string();
    for (const std::string& f : {ck_path, snap_path, stale_path, schedule_file})
        if (nn::remove_stale_tmp(f)) say("PS: removed " + f + ".tmp, left by a run that was killed while writing it");
    if (s.resume) {
        // The first part's schedule would not lead to this run's final weights.
        std::error_code ec;
        if (fs::remove(schedule_file, ec))
            say("PS: removed " + schedule_file + ": a resumed run's schedule is not recorded, and the first part's "
                "would not give its final weights");
        rule.restore_state(s.resume->meta.at("rule"));
        say_resumed(*s.resume, rule, lambda);
    }
    std::printf(
        "rudra dist: %s, %d learners, mini-batch %d, %s, base_lr %g x %.4g, %d epochs of %lld images, "
        "wait: spin %d then sleep %d us, output %s\n",
        protocol.name().c_str(), lambda, run.batch(), learner_mode_name(o.mode), s.spec.solver.lr.base_lr, rc.base_scale,
        o.epochs, static_cast<long long>(pc.samples_per_epoch), c.wait->spin, c.wait->sleep_us, o.output.c_str());
    if (protocol.elastic())
        say("easgd: learners step locally with the solver's rate and exchange beta * (local - centre) every " +
            std::to_string(o.tau) + " steps, beta " + number_text(easgd_beta(o, lambda)) +
            (o.beta > 0 ? "" : " (0.9 / learners)") + "; the PS adds the differences to the centre");
    say(s.layout.describe());

    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    auto elapsed = [&] { return pc.elapsed_offset_s + seconds_since(started); };
    const nlohmann::ordered_json settings = run_settings(o, lambda);
    dist::PsHooks hooks;
    hooks.checkpoint = [&](const std::string& reason) {
        session::CheckpointFacts facts;
        facts.method = protocol.name();
        facts.reason = reason;
        facts.epoch = rule.samples() / pc.samples_per_epoch;
        facts.elapsed_s = elapsed();
        facts.settings = settings;
        facts.rule = rule.state();
        write_checkpoint(o.output,
                         run.snapshot(static_cast<uint64_t>(rule.timestamp()), static_cast<uint64_t>(rule.samples()),
                                      s.spec.seed),
                         facts, {"PS", "update " + std::to_string(rule.timestamp())});
        if (schedule) schedule->write(schedule_file, schedule_header);
    };
    hooks.finished = [&] {
        write_final_snapshot(o.output, run.snapshot(static_cast<uint64_t>(rule.timestamp()),
                                                    static_cast<uint64_t>(rule.samples()), s.spec.seed));
        rule.staleness().write_json(stale_path, protocol.name());
        if (schedule) {
            schedule->write(schedule_file, schedule_header);
            say("PS: the schedule of the run's " + std::to_string(schedule->gradients()) + " gradients is in " +
                schedule_file + "; rudra dist --replay " + o.output + " computes the run again in one process");
        }
    };
    hooks.stop_requested = s.stop_requested;
    hooks.checkpoint_requested = s.checkpoint_requested;
    hooks.log = say;
    hooks.heartbeat = &c.heartbeat;
    dist::ParameterServer ps(c.transport, rule, params, pc, hooks);
    training_starts(c.transport, s);
    return end_of_run(o, ps.run(), rule.staleness(), {ck_path, snap_path, stale_path}, *c.mpi);
}

}  // namespace rudra::dist::run
