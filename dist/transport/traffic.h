// Traffic counters per rank (docs/distributed.md, "Traffic"): what each rank sent and received point to point
// (heartbeats left out), what it contributed to the learners' sums (all-reduce, gossip), and, for
// the PS, how many weight replies carried the weights and how many only said "nothing newer".
// Each rank's counts travel to the statistics server inside the messages it already sends (the
// learners' reports, rank 0's epoch weights), which logs rank 0's with every epoch line and every
// rank's in a "traffic" line at the end.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "dist/transport/messages.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

class SumGroup;

// This rank's counts so far; `sums` may be null (no sums).
TrafficReport traffic_report(const Transport& transport, const SumGroup* sums = nullptr);

nlohmann::ordered_json traffic_json(const TrafficReport& r);

}  // namespace rudra::dist
