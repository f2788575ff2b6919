// Thread placement for a command's rank: its OpenMP threads and memory bound to its share of the
// node, as placement.h plans it.
#pragma once
#include <functional>
#include <string>

namespace rudra::placement {

// --bind: "on" pins this rank's OpenMP threads and memory to its share of the node (plan of
// `ranks_on_node` ranks); "auto" does so only when the node is not oversubscribed (ranks x threads
// <= PUs); "off" leaves placement to the OS.
struct Binding {
    std::string message;                 // a line for the log ("" when off)
    std::function<void()> helper_thread;  // run first on a helper thread: binds it to the rank's PUs
};
Binding bind_threads(const std::string& mode, int ranks_on_node, int rank_on_node, int threads);

}  // namespace rudra::placement
