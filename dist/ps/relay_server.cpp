#include "dist/ps/relay_server.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "base/clock.h"
#include "dist/transport/messages.h"
#include "dist/transport/send_thread.h"
#include "dist/transport/timeline.h"
#include "dist/transport/traffic.h"
#include "nn/arena_loop.h"

namespace rudra::dist {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double s) {
    return Clock::now() + clock_duration(s);
}

class Relay {
public:
    Relay(Transport& t, const RelayConfig& c, Heartbeat& hb, const std::function<void(const std::string&)>& log)
        : t_(t),
          c_(c),
          hb_(hb),
          log_(log),
          // Sums go up one at a time while the loop goes on receiving.
          sender_(
              [this](std::vector<char>& bytes, const std::function<bool()>& quitting, PostedBuffers& posted) {
                  if (!t_.send_while(c_.parent, kGradientSum, bytes.data(), bytes.size(),
                                     [&] { return parent_alive() && !quitting(); }))
                      posted.keep(bytes);
              },
              c.timeline, "send sum up") {
        for (int r : c_.children) children_.push_back(Child{r});
        in_.reserve(sizeof(WeightsReply) + wire_floats_);
        weights_.reserve(sizeof(WeightsReply) + wire_floats_);
        filling_.reserve(sizeof(GradientSumHeader) + wire_floats_ + 64 * sizeof(GradientSumEntry));
        filling_.resize(sizeof(GradientSumHeader) + wire_floats_);
        if (c_.wire != Wire::Fp32) {
            sum_.resize(c_.param_floats);
            wide_.resize(c_.param_floats);
        }
    }

    RelaySummary run() {
        Clock::time_point give_up_children{};
        for (;;) {
            if (!pull_in_flight_ && !stopping_) ask_parent();
            if (!stopping_ && full() && sender_.idle()) send_sum_up();
            if (stopping_) {
                const bool children_done =
                    std::all_of(children_.begin(), children_.end(), [](const Child& ch) { return ch.bye || ch.lost; });
                if ((children_done || Clock::now() > give_up_children) && sender_.idle()) break;
            }
            if (!parent_alive()) {
                // Its children silent too: this rank hears no one (see ParameterServer::hears_no_one).
                const bool deaf = std::all_of(children_.begin(), children_.end(), [this](const Child& ch) {
                    return ch.bye || ch.lost || !hb_.heard_within(ch.rank, c_.peer_timeout_s);
                });
                throw PeerError(c_.parent, "the parent parameter server (rank " + std::to_string(c_.parent) +
                                               ") has not been heard from for " +
                                               std::to_string(hb_.silent_s(c_.parent)) + " s" +
                                               (deaf ? ", nor has any learner below: this rank has stopped receiving"
                                                     : ""));
            }
            // Wakes early when a waiting sum can go up.
            const auto deadline = after(0.05);
            std::optional<Envelope> e;
            try {
                // A message from a rank that dies while sending it never finishes arriving: it is
                // given up once the sender has been silent for the peer timeout, and the loop goes
                // on (waiting for it kept the relay from ever hearing its parent's stop).
                e = t_.recv_while(
                    kAnySource, kAnyTag, in_,
                    [&] { return Clock::now() < deadline && (stopping_ || !full() || !sender_.idle()); },
                    [this](int rank) { return hb_.heard_within(rank, c_.peer_timeout_s); });
            } catch (const PeerError& err) {
                if (log_) log_("leaf PS rank " + std::to_string(t_.rank()) + ": " + err.what());
                continue;
            }
            if (!e) continue;
            if (e->tag == kHeartbeat) {
                hb_.beat_received(e->source);
                continue;
            }
            hb_.heard(e->source);
            const bool was_stopping = stopping_;
            if (e->source == c_.parent) from_parent(*e);
            else from_child(*e);
            if (stopping_ && !was_stopping) give_up_children = after(c_.peer_timeout_s);
        }
        // The last report: this relay's traffic, for the statistics server's traffic line.
        LearnerReport last{};
        last.done = 1;
        last.traffic = traffic_report(t_);
        last.traffic.weight_replies = summary_.weight_replies;
        last.traffic.empty_replies = summary_.empty_replies;
        t_.send(c_.stats_rank, kLearnerReport, &last, sizeof last);
        // The goodbye names the children that never said theirs (the root counts them lost).
        std::vector<int64_t> missing;
        for (const Child& ch : children_)
            if (!ch.bye) missing.push_back(ch.rank);
        t_.send_while(c_.parent, kBye, missing.data(), missing.size() * sizeof(int64_t), [this] { return parent_alive(); });
        return summary_;
    }

private:
    struct Child {
        int rank = 0;
        bool bye = false, lost = false, deferred = false;
        WeightsRequest request{};
    };

    bool parent_alive() const { return hb_.heard_within(0, c_.peer_timeout_s); }

    // "Reply once you have a timestamp newer than mine": new weights come down as soon as they exist.
    void ask_parent() {
        constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
        const WeightsRequest req = c_.pulls_weights ? WeightsRequest{ts_, ts_ + 1} : WeightsRequest{kNever - 1, kNever};
        t_.send(c_.parent, kWeightsRequest, &req, sizeof req);
        pull_in_flight_ = true;
    }

    void from_parent(const Envelope& e) {
        if (e.tag != kWeightsReply)
            throw std::runtime_error("leaf PS: unexpected message tag " + std::to_string(e.tag) + " from its parent");
        pull_in_flight_ = false;
        const auto got = unpack_header<WeightsReply>(in_);
        if (got.stop) {
            stopping_ = true;
            for (Child& ch : children_)
                if (ch.deferred) {
                    ch.deferred = false;
                    reply_stop(ch);
                }
            return;
        }
        if (got.has_weights) {
            if (!holds_floats<WeightsReply>(in_, c_.param_floats, c_.wire))
                throw std::runtime_error("leaf PS: weights of " + std::to_string(in_.size()) +
                                         " bytes from its parent do not match the model (--wire " + wire_name(c_.wire) +
                                         ")");
            std::swap(in_, weights_);  // the parent's message is what the children get: no copy
            ts_ = got.ts;
            ++summary_.weights_in;
        }
        for (Child& ch : children_)
            if (ch.deferred && !ch.lost && ts_ >= ch.request.min_ts) {
                ch.deferred = false;
                reply(ch);
            }
    }

    void from_child(const Envelope& e) {
        const auto it = std::find_if(children_.begin(), children_.end(), [&](const Child& ch) { return ch.rank == e.source; });
        if (it == children_.end())
            throw std::runtime_error("leaf PS: message (tag " + std::to_string(e.tag) + ") from rank " +
                                     std::to_string(e.source) + ", which is not one of its children");
        Child& ch = *it;
        switch (e.tag) {
            case kWeightsRequest:
                ch.request = unpack_header<WeightsRequest>(in_);
                if (stopping_) reply_stop(ch);
                else if (ts_ >= 0 && ts_ >= ch.request.min_ts) reply(ch);
                else ch.deferred = true;
                break;
            case kGradient:
                if (!stopping_) add_gradient(e);
                break;
            case kGradientSum:
                if (!stopping_) add_sum(e);
                break;
            case kBye: {
                ch.bye = true;
                // The root watches every learner's heartbeats: a learner that is done stops sending
                // them, and must not be taken for lost.
                const int64_t done = e.source;
                t_.send(c_.parent, kChildDone, &done, sizeof done);
                break;
            }
            case kChildDone:  // from a leaf below: passed up to the root
                t_.send(c_.parent, kChildDone, in_.data(), in_.size());
                break;
            default:
                throw std::runtime_error("leaf PS: unexpected message tag " + std::to_string(e.tag) + " from rank " +
                                         std::to_string(e.source));
        }
    }

    // Sends to a child; a child that does not take it within the peer timeout is out of the run.
    void send_child(Child& ch, const std::vector<char>& bytes) {
        bool sent = false;
        try {
            sent = t_.send_while(ch.rank, kWeightsReply, bytes.data(), bytes.size(), until(after(c_.peer_timeout_s)));
        } catch (const PeerError& err) {
            if (log_) log_(std::string("leaf PS: ") + err.what());
        }
        if (sent) return;
        ch.lost = true;
        posted_.keep_copying(&bytes == &weights_ ? weights_ : small_);
        if (log_) log_("leaf PS rank " + std::to_string(t_.rank()) + ": rank " + std::to_string(ch.rank) +
                       " did not take its weights within " + std::to_string(c_.peer_timeout_s) + " s; left out");
    }

    void reply(Child& ch) {
        if (ts_ > ch.request.have_ts) {
            const Span span(c_.timeline, "reply with weights");
            ++summary_.weight_replies;
            send_child(ch, weights_);
        } else {
            ++summary_.empty_replies;
            pack(small_, WeightsReply{ts_, 0, 0});
            send_child(ch, small_);
        }
    }

    void reply_stop(Child& ch) {
        pack(small_, WeightsReply{ts_, 0, 1});
        send_child(ch, small_);
    }

    bool full() const { return static_cast<int64_t>(entries_.size()) >= std::max<int64_t>(1, c_.share); }

    // The sum being filled: in the message itself with FP32 on the wire, else in FP32 beside it.
    float* sum() {
        return c_.wire == Wire::Fp32 ? reinterpret_cast<float*>(filling_.data() + sizeof(GradientSumHeader)) : sum_.data();
    }

    // Adds the wire's floats at `at` in in_ to the sum.
    void accumulate(size_t at) {
        const float* g = reinterpret_cast<const float*>(in_.data() + at);
        if (c_.wire != Wire::Fp32) {
            wire_decode(c_.wire, in_.data() + at, c_.param_floats, wide_.data());
            g = wide_.data();
        }
        add_to_relayed_sum(sum(), g, static_cast<long>(c_.param_floats), entries_.empty());
    }

    void add_gradient(const Envelope& e) {
        if (!holds_floats<GradientHeader>(in_, c_.param_floats, c_.wire))
            throw std::runtime_error("leaf PS: gradient of " + std::to_string(in_.size()) + " bytes from rank " +
                                     std::to_string(e.source) + " does not match the model (--wire " +
                                     wire_name(c_.wire) + ")");
        const auto h = unpack_header<GradientHeader>(in_);
        const Span span(c_.timeline, "add gradient");
        accumulate(sizeof(GradientHeader));
        entries_.push_back(GradientSumEntry{e.source, h.ts});
        ++summary_.gradients;
    }

    void add_sum(const Envelope& e) {
        const auto h = unpack_header<GradientSumHeader>(in_);
        if (!gradient_sum_fits(in_.size(), wire_floats_, h.count))
            throw std::runtime_error("leaf PS: a sum of " + std::to_string(h.count) + " gradients in " +
                                     std::to_string(in_.size()) + " bytes from rank " + std::to_string(e.source) +
                                     " does not match the model");
        const Span span(c_.timeline, "add sum");
        accumulate(sizeof h);
        const char* entries = in_.data() + sizeof h + wire_floats_;
        for (int64_t k = 0; k < h.count; ++k) {
            GradientSumEntry entry;
            std::memcpy(&entry, entries + k * static_cast<int64_t>(sizeof entry), sizeof entry);
            entries_.push_back(entry);
        }
        summary_.gradients += h.count;
    }

    void send_sum_up() {
        const GradientSumHeader h{static_cast<int64_t>(entries_.size())};
        std::memcpy(filling_.data(), &h, sizeof h);
        if (c_.wire != Wire::Fp32) wire_encode(c_.wire, sum_.data(), c_.param_floats, filling_.data() + sizeof h);
        const size_t at = filling_.size();
        filling_.resize(at + entries_.size() * sizeof(GradientSumEntry));
        std::memcpy(filling_.data() + at, entries_.data(), entries_.size() * sizeof(GradientSumEntry));
        sender_.send(filling_);  // filling_ is now the buffer that was sent before
        filling_.resize(sizeof(GradientSumHeader) + wire_floats_);
        entries_.clear();
        ++summary_.sums;
    }

    Transport& t_;
    const RelayConfig& c_;
    Heartbeat& hb_;
    const std::function<void(const std::string&)>& log_;
    std::vector<Child> children_;
    const size_t wire_floats_ = wire_bytes(c_.wire, c_.param_floats);  // bytes of a payload
    std::vector<char> in_, weights_, small_, filling_;
    std::vector<float> sum_, wide_;  // --wire bf16: the sum in FP32, and a payload widened
    PostedBuffers posted_;  // replies to children given up
    std::vector<GradientSumEntry> entries_;
    int64_t ts_ = -1;
    bool pull_in_flight_ = false, stopping_ = false;
    RelaySummary summary_;
    SendThread sender_;  // last: its thread ends before the buffers above go
};

}  // namespace

void add_to_relayed_sum(float* sum, const float* grad, long n, bool first) {
    if (first) nn::arena_loop(n, [&](long i) { sum[i] = grad[i]; });
    else nn::arena_loop(n, [&](long i) { sum[i] += grad[i]; });
}

RelaySummary run_relay(Transport& transport, const RelayConfig& config, Heartbeat& heartbeat,
                       const std::function<void(const std::string&)>& log) {
    Relay relay(transport, config, heartbeat, log);
    return relay.run();
}

}  // namespace rudra::dist
