// Who is who in a parameter-server run: the rank layout of Rudra-base and Rudra-adv.
//
// base: rank 0 is the parameter server, rank 1 the statistics server, every other rank a learner
// that talks to rank 0.
// adv: the parameter server is a group that forms a tree (the paper's Rudra-adv). Rank 0 is its
// root and applies the updates; on every node, the first rank after 0 and 1 is a leaf PS (a relay)
// and the node's other ranks are its learners. A relay sums its learners' gradients and sends the
// sum up, with the learners and timestamps it holds, so that the root counts, clocks and
// modulates every gradient as with one PS; it pulls weights from its parent and answers its
// children's pulls. Relays hang below the root `fan_out` to a parent (0: all below the root).
// adv*: adv, and the weights go down a broadcast tree over the learners instead of being pulled
// (the paper's Rudra-adv*): the root sends each new version to its first `broadcast_fan_out`
// learners, and learner k (0-based, in rank order) forwards it to learners F(k+1) .. F(k+1)+F-1.
// Every rank computes the same layout from the node of each rank, so nothing is sent to agree.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rudra::dist {

enum class Topology { Base, Adv, AdvStar };

// "base", "adv" or "adv*"; throws naming the choices.
Topology parse_topology(const std::string& name);
std::string topology_name(Topology t);

class RankLayout {
public:
    enum class Role { RootPs, Stats, Relay, Learner };

    // `node_of_rank`: a node number for every rank (ranks with the same number share a node).
    // Throws when the layout cannot be made (fewer than 3 ranks, an adv node with one rank).
    static RankLayout make(Topology topology, const std::vector<int>& node_of_rank, int fan_out,
                           int broadcast_fan_out = 2);

    Topology topology() const { return topology_; }
    int size() const { return static_cast<int>(role_.size()); }
    Role role(int rank) const { return role_.at(static_cast<size_t>(rank)); }
    // The rank a learner or relay pushes gradients to and pulls weights from (-1 for 0 and 1).
    int parent(int rank) const { return parent_.at(static_cast<size_t>(rank)); }
    int node(int rank) const { return node_.at(static_cast<size_t>(rank)); }
    // The ranks whose parent is `rank`, in rank order.
    std::vector<int> children(int rank) const;
    // Every learner, in rank order; a learner's index is its place here (the root's learner
    // numbering for counts, clocks and checkpoints).
    const std::vector<int>& learners() const { return learners_; }
    int learner_index(int rank) const;  // -1 when `rank` is not a learner
    const std::vector<int>& relays() const { return relays_; }
    // The learners below `rank` (a relay: its subtree; the root: all).
    std::vector<int> learners_below(int rank) const;
    // adv*: where a learner receives the weights from (rank 0 or a learner; -1 when not adv*), and
    // the learners a rank forwards them to (rank 0: the broadcast's first learners).
    int broadcast_parent(int rank) const;
    std::vector<int> broadcast_children(int rank) const;

    // The ranks `rank` sends to or receives from besides rank 0 (its leaf PS, its learners, its
    // broadcast parent and children), in rank order: the ranks it also sends heartbeats to.
    std::vector<int> peers(int rank) const;
    std::string role_name(int rank) const;  // "root parameter server", "leaf parameter server", ...
    // One line per node for the job's output, and the same as JSON for metrics.jsonl.
    std::string describe() const;
    nlohmann::ordered_json to_json() const;

private:
    Topology topology_ = Topology::Base;
    int fan_out_ = 0, broadcast_fan_out_ = 0;
    std::vector<Role> role_;
    std::vector<int> parent_, node_, learners_, relays_;
};

}  // namespace rudra::dist
