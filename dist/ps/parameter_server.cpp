#include "dist/ps/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/clock.h"
#include "dist/transport/messages.h"
#include "dist/transport/timeline.h"
#include "nn/atomic_file.h"

namespace rudra::dist {
namespace {

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", s);
    return buf;
}

}  // namespace

ParameterServer::ParameterServer(Transport& transport, UpdateRule& rule, nn::ParamStore& params, PsConfig config,
                                 PsHooks hooks)
    : t_(transport), rule_(rule), params_(params), config_(std::move(config)), hooks_(std::move(hooks)),
      stats_(transport, config_.stats_rank, nullptr,
             [this](int tag, std::vector<char>& bytes) { return send_checked(config_.stats_rank, tag, bytes); }) {
    if (!hooks_.heartbeat) throw std::logic_error("ParameterServer needs a Heartbeat");
    int max_rank = 0;
    for (int r : config_.learner_ranks) max_rank = std::max(max_rank, r);
    learner_of_rank_.assign(static_cast<size_t>(max_rank) + 1, -1);
    for (size_t i = 0; i < config_.learner_ranks.size(); ++i) {
        const int r = config_.learner_ranks[i];
        learner_of_rank_[static_cast<size_t>(r)] = static_cast<int>(i);
        learners_.push_back(Learner{r, static_cast<int>(i)});
    }
    if (config_.relays.empty()) {
        for (int r : config_.learner_ranks) children_.push_back(Child{r});
    } else {
        for (const PsConfig::Relay& relay : config_.relays) {
            for (int r : relay.learner_ranks) {
                const int i = r < static_cast<int>(learner_of_rank_.size()) ? learner_of_rank_[static_cast<size_t>(r)] : -1;
                if (i < 0) throw std::logic_error("PS: rank " + std::to_string(r) + " below a leaf PS is not a learner");
                learners_[static_cast<size_t>(i)].child = static_cast<int>(children_.size());
            }
            children_.push_back(Child{relay.rank, true});
        }
    }
    in_.reserve(sizeof(GradientHeader) + params_.size() * sizeof(float));
    out_.reserve(sizeof(WeightsReply) + params_.size() * sizeof(float));
}

double ParameterServer::elapsed() const { return config_.elapsed_offset_s + seconds_since(started_); }

bool ParameterServer::peer_alive(int rank) const {
    return hooks_.heartbeat->heard_within(rank, config_.peer_timeout_s);
}

int ParameterServer::live_learners() const {
    return static_cast<int>(std::count_if(learners_.begin(), learners_.end(), [](const Learner& l) { return !l.lost; }));
}

// Sends `bytes`; gives up once `rank` has been silent for the timeout (the buffer then stays
// with the posted send, and `bytes` starts afresh).
bool ParameterServer::send_checked(int rank, int tag, std::vector<char>& bytes) {
    try {
        if (t_.send_while(rank, tag, bytes.data(), bytes.size(), [&] { return peer_alive(rank); }))
            return true;
    } catch (const PeerError& e) {
        if (hooks_.log) hooks_.log(std::string("PS: ") + e.what());
    }
    posted_.keep(bytes);
    return false;
}

void ParameterServer::reply(int rank, int64_t have_ts) {
    const int64_t ts = rule_.timestamp();
    const bool newer = ts > have_ts;
    const Span span(config_.timeline, newer ? "reply with weights" : "reply: nothing newer", Lane::Main, rank);
    ++(newer ? weight_replies_ : empty_replies_);
    if (newer && config_.wire != Wire::Fp32) {
        // Rounded once per version, however many learners pull it.
        if (wire_weights_ts_ != ts) {
            pack(wire_weights_, WeightsReply{ts, 1, 0}, params_.values(), params_.size(), config_.wire);
            wire_weights_ts_ = ts;
        }
        out_ = wire_weights_;
    } else {
        pack(out_, WeightsReply{ts, newer ? 1 : 0, 0}, newer ? params_.values() : nullptr, newer ? params_.size() : 0);
    }
    if (!send_out(rank, kWeightsReply)) check_peers();
}

void ParameterServer::reply_stop(int rank) {
    pack(out_, WeightsReply{rule_.timestamp(), 0, 1});
    send_out(rank, kWeightsReply);
}

void ParameterServer::send_epoch_weights(int64_t epoch, bool final, bool replay) {
    EpochWeightsHeader h{};
    h.epoch = epoch;
    h.ts = rule_.timestamp();
    h.samples = rule_.samples();
    h.elapsed_s = elapsed();
    if (!replay) rule_.staleness().take_epoch(h.staleness_mean, h.staleness_max, h.dropped);
    h.drops = rule_.drops_gradients() ? 1 : 0;
    h.final = final ? 1 : 0;
    h.replay = replay ? 1 : 0;
    h.traffic.weight_replies = weight_replies_;
    h.traffic.empty_replies = empty_replies_;
    if (stats_lost_) return;
    if (!stats_.send_epoch(h, params_.values(), params_.size())) check_peers();
}

void ParameterServer::checkpoint(const std::string& reason) {
    if (hooks_.checkpoint) hooks_.checkpoint(reason);
}

bool ParameterServer::save(session::CheckpointWhy why, const session::RunPosition&) {
    switch (why) {
        case session::CheckpointWhy::Periodic:
            // Held back until the statistics server has logged the last epoch, so that a resumed
            // run never lacks an epoch line that came before its checkpoint.
            if (stopping_ || logged_epoch_ < epoch_) return false;
            [[fallthrough]];
        case session::CheckpointWhy::Request:
            checkpoint(session::reason_name(why));
            return true;
        case session::CheckpointWhy::Epoch:
        case session::CheckpointWhy::End:
            checkpoint("epoch");
            return true;
        case session::CheckpointWhy::Signal:
            break;
    }
    const std::string reason = result_.end == PsResult::End::Stopped ? "signal" : "learner lost";
    if (logged_epoch_ >= epoch_) {
        checkpoint(reason);
    } else if (!stats_lost_) {
        // A checkpoint must not run ahead of the metrics: it is written when the statistics
        // server acknowledges the epoch it is testing (it is on its way: messages keep order).
        stop_checkpoint_reason_ = reason;
        if (hooks_.log)
            hooks_.log("PS: the stopping checkpoint waits until the statistics server has logged epoch " +
                       std::to_string(epoch_));
    } else if (hooks_.log) {
        hooks_.log("PS: no new checkpoint: the statistics server, lost, never logged epoch " + std::to_string(epoch_) +
                   ", so the checkpoint of that epoch's end stays the newest");
    }
    return true;
}

void ParameterServer::answer_deferred() {
    for (Child& l : children_) {
        if (!l.deferred || l.lost) continue;
        if (stopping_) {
            l.deferred = false;
            reply_stop(l.rank);
        } else if (rule_.timestamp() >= l.request.min_ts) {
            l.deferred = false;
            reply(l.rank, l.request.have_ts);
        }
    }
}

// The run stops short: the step ends, the loop writes the stopping checkpoint (save), and end()
// tells the statistics server and the learners.
void ParameterServer::stop_run(PsResult::End end, const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    result_.end = end;
    result_.why = why;
}

void ParameterServer::tell_stats_lost(int rank, double silent_s, bool fatal) {
    if (stats_lost_) return;
    stats_.learner_lost(LearnerLost{rank, elapsed(), silent_s, live_learners(), fatal ? 1 : 0});
}

// A leaf PS is lost, and with it every learner below it.
void ParameterServer::lose_relay(int index, double silent_s) {
    Child& c = children_[static_cast<size_t>(index)];
    c.lost = true;
    c.deferred = false;
    hooks_.heartbeat->stop_notifying(c.rank);
    result_.lost_ranks.push_back(c.rank);
    if (hooks_.log)
        hooks_.log("PS: leaf parameter server rank " + std::to_string(c.rank) + " lost after " +
                   seconds_text(elapsed()) + ": silent for " + seconds_text(silent_s) +
                   "; the learners below it are lost with it");
    for (size_t i = 0; i < learners_.size(); ++i)
        if (learners_[i].child == index && !learners_[i].lost) lose_learner(static_cast<int>(i), silent_s);
    tell_stats_lost(c.rank, silent_s, !rule_.goes_on_without_learners());
}

void ParameterServer::lose_learner(int index, double silent_s) {
    Learner& l = learners_[static_cast<size_t>(index)];
    l.lost = true;
    Child& c = children_[static_cast<size_t>(l.child)];
    if (!c.relay) {
        c.lost = true;
        c.deferred = false;
    }
    hooks_.heartbeat->stop_notifying(l.rank);
    result_.lost_ranks.push_back(l.rank);
    const int live = live_learners();
    const bool fatal = (!rule_.goes_on_without_learners() || broadcast_) && !stopping_;
    if (hooks_.log)
        hooks_.log("PS: learner rank " + std::to_string(l.rank) + " lost after " + seconds_text(elapsed()) +
                   ": silent for " + seconds_text(silent_s) + " (dead, stopped or cut off); " +
                   (fatal ? std::string(broadcast_ ? "the learners below it in the broadcast tree would get no more weights"
                                                   : "hardsync cannot go on without it")
                          : std::to_string(live) + " learners go on"));
    tell_stats_lost(l.rank, silent_s, fatal);
    if (fatal) {
        stop_run(PsResult::End::LearnerLost, "learner rank " + std::to_string(l.rank) + " stopped answering, and " +
                                                 (broadcast_ ? "adv*'s broadcast tree" : "hardsync") +
                                                 " needs every learner");
    } else if (rule_.goes_on_without_learners() && live > 0) {
        rule_.set_live_learners(live);
        if (!stopping_ && rule_.update_if_complete()) after_update();
    }
}

// Every peer still in the run (two at least, the statistics server counted) silent at once. A rank
// killed while writing into this rank's queue leaves it blocked for good (UCX's shared-memory
// transport: the writer reserves a slot, fills it, then marks it; the reader waits at the
// unmarked slot), and nothing arrives from anyone after it: a sender killed in the middle of a
// stream of large messages can do that.
bool ParameterServer::hears_no_one() const {
    const Heartbeat& hb = *hooks_.heartbeat;
    int watched = 0;
    const auto silent = [&](int rank) {
        ++watched;
        return !hb.heard_within(rank, config_.peer_timeout_s);
    };
    for (const Child& c : children_)
        if (c.relay && !c.lost && !c.bye && !silent(c.rank)) return false;
    for (const Learner& l : learners_)
        if (!l.lost && !l.done && !children_[static_cast<size_t>(l.child)].bye && !silent(l.rank))
            return false;
    if (!stats_lost_ && !result_.stats_done && !silent(config_.stats_rank)) return false;
    return watched >= 2;
}

void ParameterServer::check_peers() {
    Heartbeat& hb = *hooks_.heartbeat;
    if (!deaf_ && hears_no_one()) {
        // Said once, before the losses it causes: they are this rank's, not the peers'.
        deaf_ = true;
        if (hooks_.log)
            hooks_.log("PS: every rank fell silent at once: this rank has stopped receiving (most likely a rank killed "
                       "or stopped while sending to it has blocked its MPI receive queue), and cannot go on");
        stop_run(PsResult::End::LearnerLost, "it stopped receiving from every rank at once");
    }
    for (size_t i = 0; i < children_.size(); ++i) {
        const Child& c = children_[i];
        if (!c.relay || c.lost || c.bye) continue;
        const double silent = hb.silent_s(c.rank);
        if (silent > config_.peer_timeout_s) lose_relay(static_cast<int>(i), silent);
    }
    for (size_t i = 0; i < learners_.size(); ++i) {
        const Learner& l = learners_[i];
        if (l.lost || l.done || children_[static_cast<size_t>(l.child)].bye) continue;
        const double silent = hb.silent_s(l.rank);
        if (silent > config_.peer_timeout_s) lose_learner(static_cast<int>(i), silent);
    }
    if (!stats_lost_ && !result_.stats_done && !hb.heard_within(config_.stats_rank, config_.peer_timeout_s)) {
        stats_lost_ = true;
        hb.stop_notifying(config_.stats_rank);
        result_.lost_ranks.push_back(config_.stats_rank);
        if (hooks_.log)
            hooks_.log("PS: the statistics server (rank " + std::to_string(config_.stats_rank) +
                       ") stopped answering; training goes on without test passes or metrics lines");
    }
}

// adv*: a new version goes down the broadcast tree once the previous one has left (the newest
// then); when the run stops, a stop message follows the last version.
bool ParameterServer::broadcast_waits() {
    return broadcast_ && ((stopping_ && !stop_broadcast_) || (broadcast_due_ && !stopping_ && broadcast_->idle()));
}

void ParameterServer::maybe_broadcast() {
    if (!broadcast_waits()) return;
    if (stopping_) {
        stop_broadcast_ = true;
        for (const Learner& l : learners_) {
            if (l.lost) continue;
            pack(out_, WeightsReply{rule_.timestamp(), 0, 1});
            send_out(l.rank, kBroadcastWeights);
        }
        return;
    }
    pack(broadcast_out_, WeightsReply{rule_.timestamp(), 1, 0}, params_.values(), params_.size(), config_.wire);
    broadcast_due_ = false;
    ++weight_replies_;
    broadcast_->send(broadcast_out_);
}

void ParameterServer::after_update() {
    broadcast_due_ = true;
    // The last update: the requests waiting for it are answered with the stop.
    if (rule_.samples() >= config_.epochs * config_.samples_per_epoch) stopping_ = true;
    answer_deferred();
}

bool ParameterServer::epoch_end(const session::RunPosition& at, bool last) {
    epoch_ = at.epoch;
    if (last && hooks_.finished) hooks_.finished();
    send_epoch_weights(epoch_, last, false);
    return false;
}

// The model-sized payload at `at` in the message received, as FP32: in place, or widened from
// the wire's format.
const float* ParameterServer::payload_fp32(size_t at) {
    if (config_.wire == Wire::Fp32) return reinterpret_cast<const float*>(in_.data() + at);
    wide_gradient_.resize(params_.size());
    wire_decode(config_.wire, in_.data() + at, params_.size(), wide_gradient_.data());
    return wide_gradient_.data();
}

// A leaf PS's sum: its gradients are counted, clocked and weighed one by one, as if each had come
// alone; those of learners lost meanwhile are dropped with the sum (it cannot be split).
void ParameterServer::take_gradient_sum(const Envelope& e, int index) {
    const auto h = unpack_header<GradientSumHeader>(in_);
    const size_t floats = wire_bytes(config_.wire, params_.size());
    if (!gradient_sum_fits(in_.size(), floats, h.count))
        throw std::runtime_error("PS: a sum of " + std::to_string(h.count) + " gradients in " +
                                 std::to_string(in_.size()) + " bytes from rank " + std::to_string(e.source) +
                                 " does not match the model");
    bundle_.clear();
    const char* entries = in_.data() + sizeof(GradientSumHeader) + floats;
    for (int64_t k = 0; k < h.count; ++k) {
        GradientSumEntry entry;
        std::memcpy(&entry, entries + k * static_cast<int64_t>(sizeof entry), sizeof entry);
        const int r = static_cast<int>(entry.learner_rank);
        const int i = r >= 0 && r < static_cast<int>(learner_of_rank_.size()) ? learner_of_rank_[static_cast<size_t>(r)] : -1;
        if (i < 0 || learners_[static_cast<size_t>(i)].child != index)
            throw std::runtime_error("PS: a sum from rank " + std::to_string(e.source) + " holds a gradient of rank " +
                                     std::to_string(r) + ", which is not a learner below it");
        if (learners_[static_cast<size_t>(i)].lost) {
            result_.dropped_gradients += h.count;
            return;
        }
        bundle_.push_back(BundledGradient{i, entry.ts});
    }
    const float* sum = payload_fp32(sizeof(GradientSumHeader));
    const Span span(config_.timeline, "gradient sum (and update)", Lane::Main, e.source);
    if (rule_.add_bundle(bundle_, sum)) after_update();
}

void ParameterServer::handle_child(const Envelope& e, int index) {
    Child& l = children_[static_cast<size_t>(index)];
    if (l.lost) {  // back from a stop, or late: it is out of this run
        if (e.tag == kWeightsRequest) reply_stop(l.rank);
        if (e.tag == kGradient) ++result_.dropped_gradients;
        if (e.tag == kGradientSum) result_.dropped_gradients += unpack_header<GradientSumHeader>(in_).count;
        return;
    }
    switch (e.tag) {
        case kWeightsRequest: {
            const auto req = unpack_header<WeightsRequest>(in_);
            if (stopping_) {
                reply_stop(e.source);
            } else if (rule_.timestamp() >= req.min_ts) {
                reply(e.source, req.have_ts);
            } else {
                l.deferred = true;
                l.request = req;
            }
            break;
        }
        case kGradient: {
            if (stopping_) {
                ++result_.dropped_gradients;
                break;
            }
            if (l.relay) throw std::runtime_error("PS: a single gradient from a leaf PS");
            const auto h = unpack_header<GradientHeader>(in_);
            if (!holds_floats<GradientHeader>(in_, params_.size(), config_.wire))
                throw std::runtime_error("PS: gradient of " + std::to_string(in_.size()) + " bytes from rank " +
                                         std::to_string(e.source) + " does not match the model (" +
                                         std::to_string(params_.size()) + " " + wire_name(config_.wire) + " values)");
            const float* grad = payload_fp32(sizeof(GradientHeader));
            const Span span(config_.timeline, "gradient (and update)", Lane::Main, e.source);
            if (rule_.add_gradient(learner_of_rank_[static_cast<size_t>(l.rank)], h.ts, grad)) after_update();
            break;
        }
        case kChildDone: {
            if (!l.relay) throw std::runtime_error("PS: a learner's goodbye relayed by a learner");
            const auto r = unpack_header<int64_t>(in_);
            const int i = r >= 0 && r < static_cast<int64_t>(learner_of_rank_.size())
                              ? learner_of_rank_[static_cast<size_t>(r)] : -1;
            if (i >= 0) {
                learners_[static_cast<size_t>(i)].done = true;
                hooks_.heartbeat->stop_notifying(static_cast<int>(r));
            }
            break;
        }
        case kGradientSum:
            if (!l.relay) throw std::runtime_error("PS: a sum of gradients from a learner");
            if (stopping_) {
                result_.dropped_gradients += unpack_header<GradientSumHeader>(in_).count;
                break;
            }
            take_gradient_sum(e, index);
            break;
        case kBye:
            l.bye = true;
            hooks_.heartbeat->stop_notifying(l.rank);
            // A leaf PS names the learners that never said goodbye to it (dead, or cut off): they
            // are lost, whether or not their silence has been noticed yet.
            for (size_t k = 0; l.relay && k < in_.size() / sizeof(int64_t); ++k) {
                int64_t r;
                std::memcpy(&r, in_.data() + k * sizeof r, sizeof r);
                const int i = r >= 0 && r < static_cast<int64_t>(learner_of_rank_.size())
                                  ? learner_of_rank_[static_cast<size_t>(r)] : -1;
                if (i >= 0 && !learners_[static_cast<size_t>(i)].lost)
                    lose_learner(i, hooks_.heartbeat->silent_s(static_cast<int>(r)));
            }
            for (const Learner& below : learners_)  // a leaf PS says goodbye after its learners
                if (&children_[static_cast<size_t>(below.child)] == &l) hooks_.heartbeat->stop_notifying(below.rank);
            break;
        default:
            throw std::runtime_error("PS: unexpected message tag " + std::to_string(e.tag) + " from rank " +
                                     std::to_string(e.source));
    }
}

void ParameterServer::handle_stats(const Envelope& e) {
    if (e.tag == kEpochLogged) {
        logged_epoch_ = std::max(logged_epoch_, unpack_header<int64_t>(in_));
        if (!stop_checkpoint_reason_.empty() && logged_epoch_ >= epoch_) {
            checkpoint(stop_checkpoint_reason_);
            stop_checkpoint_reason_.clear();
        }
    } else if (e.tag == kStatsDone) {
        result_.stats_done = true;
        hooks_.heartbeat->stop_notifying(config_.stats_rank);
    } else {
        throw std::runtime_error("PS: unexpected message tag " + std::to_string(e.tag) + " from the statistics server");
    }
}

// The next message within `wait_s`, or none. A message from a rank that dies while sending it
// is no message: the rank's silence will tell. The catch returns nullopt itself, so that no
// caller's variable can keep a previous envelope across the exception and be read as a message
// (g++ 12 -O2 did that to a loop variable assigned inside a try).
std::optional<Envelope> ParameterServer::receive(double wait_s) {
    try {
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(wait_s));
        // Wakes early when a version can go down the broadcast tree.
        const KeepWaiting keep_waiting = [&] { return std::chrono::steady_clock::now() < deadline && !broadcast_waits(); };
        if (ahead_) return ahead_->next(in_, keep_waiting);
        return t_.recv_while(kAnySource, kAnyTag, in_, keep_waiting,
                             [this](int rank) { return peer_alive(rank); });
    } catch (const PeerError& error) {
        if (hooks_.log) hooks_.log(std::string("PS: ") + error.what());
        return std::nullopt;
    }
}

PsResult ParameterServer::run() {
    if (!config_.broadcast_children.empty()) {
        broadcast_ = std::make_unique<BroadcastSender>(
            t_, config_.broadcast_children, [this](int r) { return peer_alive(r); },
            config_.timeline, hooks_.log);
        broadcast_due_ = true;  // the learners start from the first version
    }
    if (config_.receive_ahead) {
        const auto log = hooks_.log;
        ahead_ = std::make_unique<ReceiveAhead>(
            t_, [this](int r) { return peer_alive(r); },
            [log](const std::string& what) {
                if (log) log("PS: " + what);
            });
    }
    started_ = SteadyClock::now();
    session::RunPlan plan;
    plan.samples_per_epoch = config_.samples_per_epoch;
    plan.total_samples = config_.epochs * config_.samples_per_epoch;
    plan.start = {rule_.timestamp(), rule_.samples(), 0, 0.0};  // after a warm start or resume
    plan.elapsed_offset_s = config_.elapsed_offset_s;
    plan.checkpoint_every = config_.checkpoint_every;
    plan.checkpoint_at_epochs = plan.checkpoint_at_end = true;
    // The stop request is asked between messages, inside the step (a step may wait long).
    plan.snapshot_requested = hooks_.checkpoint_requested;
    session::run_loop(*this, plan);
    broadcast_.reset();  // its thread ends (a send to a lost learner is given up)
    if (ahead_) {
        // The receiving thread ends too. What it took is dropped (the run is over), but a
        // heartbeat is counted: at the end every rank receives the heartbeats still on their way
        // by count (Heartbeat::drain), and would wait for this one forever.
        ahead_->stop();
        while (const std::optional<Envelope> e = ahead_->next(in_, [] { return false; }))
            if (e->tag == kHeartbeat) hooks_.heartbeat->beat_received(e->source);
        ahead_.reset();
    }
    result_.updates = rule_.timestamp();
    result_.samples = rule_.samples();
    result_.elapsed_s = elapsed();
    return result_;
}

void ParameterServer::begin(const session::RunPosition& at) {
    epoch_ = at.epoch;
    logged_epoch_ = epoch_;
    if (config_.replay_epoch && epoch_ > 0) {
        logged_epoch_ = epoch_ - 1;
        send_epoch_weights(epoch_, false, true);
    }
}

session::StepDone ParameterServer::step(const session::RunPosition& at, bool) {
    const auto stopped_short = [this] { return result_.end != PsResult::End::Finished; };  // stop_run
    serve([&] { return rule_.timestamp() > at.steps || stopped_short(); });
    return {rule_.samples() - at.samples, stopped_short(), rule_.timestamp() - at.steps};
}

// After the loop: the statistics server hears of an early end, the waiting requests get the
// stop, and the PS serves until every learner has left.
void ParameterServer::end(const session::RunPosition&, bool stopped) {
    stopping_ = true;
    if (stopped && !stats_lost_)
        stats_.run_end(result_.end == PsResult::End::Stopped ? kEndSignal : kEndLearnerLost, epoch_,
                       rule_.timestamp(), elapsed());
    answer_deferred();
    serve([] { return false; });
}

void ParameterServer::serve(const std::function<bool()>& enough) {
    Heartbeat& hb = *hooks_.heartbeat;
    for (;;) {
        const bool learners_done =
            std::all_of(children_.begin(), children_.end(), [](const Child& l) { return l.bye || l.lost; });
        if (learners_done) {
            if (!stopping_) stop_run(PsResult::End::LearnerLost, "every learner stopped answering");
            if (result_.stats_done || stats_lost_) return;
        }
        if (enough()) return;
        maybe_broadcast();
        const std::optional<Envelope> e = receive(0.2);
        if (e) try {
            if (e->tag == kHeartbeat) {
                hb.beat_received(e->source);
            } else if (e->source == config_.stats_rank) {
                hb.heard(e->source);
                handle_stats(*e);
            } else {
                auto it = std::find_if(children_.begin(), children_.end(),
                                       [&](const Child& l) { return l.rank == e->source; });
                if (it == children_.end())
                    throw std::runtime_error("PS: message from rank " + std::to_string(e->source) + ", which is not " +
                                             (config_.relays.empty() ? "a learner" : "a leaf parameter server"));
                hb.heard(e->source);
                handle_child(*e, static_cast<int>(it - children_.begin()));
            }
        } catch (const PeerError&) {
            throw;
        } catch (const nn::WriteError&) {
            throw;  // a checkpoint or the final model that could not be written: no fault of the sender
        } catch (const std::exception& error) {
            throw std::runtime_error("PS: message (tag " + std::to_string(e->tag) + ", " + std::to_string(e->bytes) +
                                     " bytes) from rank " + std::to_string(e->source) + ": " + error.what());
        }
        if (SteadyClock::now() >= next_check_) {
            next_check_ = SteadyClock::now() + std::chrono::milliseconds(200);
            check_peers();
            if (!stopping_ && hooks_.stop_requested && hooks_.stop_requested())
                stop_run(PsResult::End::Stopped, "stopped by a signal");
        }
    }
}

}  // namespace rudra::dist
