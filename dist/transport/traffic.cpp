#include "dist/transport/traffic.h"

#include "dist/transport/sum_group.h"

namespace rudra::dist {

TrafficReport traffic_report(const Transport& transport, const SumGroup* sums) {
    // Training's traffic: not the heartbeats, nor the start-up's messages.
    const TrafficCounts c = transport.traffic([](int tag) {
        return tag != kHeartbeat && tag != kHeartbeatCount && tag != kRunIdentity && tag != kReadyToTrain;
    });
    TrafficReport r{};
    r.sent_messages = c.sent_messages;
    r.sent_bytes = c.sent_bytes;
    r.received_messages = c.received_messages;
    r.received_bytes = c.received_bytes;
    if (sums) {
        r.sums = sums->sums_posted();
        r.sum_bytes = sums->sum_bytes();
    }
    return r;
}

nlohmann::ordered_json traffic_json(const TrafficReport& r) {
    nlohmann::ordered_json j{{"sent_messages", r.sent_messages},
                             {"sent_bytes", r.sent_bytes},
                             {"received_messages", r.received_messages},
                             {"received_bytes", r.received_bytes}};
    if (r.sums > 0) {
        j["sums"] = r.sums;
        j["sum_bytes"] = r.sum_bytes;
    }
    if (r.weight_replies + r.empty_replies > 0) {
        j["weight_replies"] = r.weight_replies;
        j["empty_replies"] = r.empty_replies;
    }
    return j;
}

}  // namespace rudra::dist
