#include "dist/ps/topology.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace rudra::dist {

Topology parse_topology(const std::string& name) {
    if (name == "base") return Topology::Base;
    if (name == "adv") return Topology::Adv;
    if (name == "adv*") return Topology::AdvStar;
    throw std::runtime_error("--topology must be base, adv or adv*, got '" + name + "'");
}

std::string topology_name(Topology t) {
    return t == Topology::AdvStar ? "adv*" : t == Topology::Adv ? "adv" : "base";
}

RankLayout RankLayout::make(Topology topology, const std::vector<int>& node_of_rank, int fan_out,
                            int broadcast_fan_out) {
    const int size = static_cast<int>(node_of_rank.size());
    if (size < 3)
        throw std::runtime_error("a parameter-server run needs at least 3 ranks (parameter server, statistics server, "
                                 "a learner); got " + std::to_string(size));
    if (fan_out < 0) throw std::runtime_error("--fan-out must be 0 (every leaf PS below the root) or more");
    if (broadcast_fan_out < 1) throw std::runtime_error("--broadcast-fan-out must be 1 or more");
    RankLayout l;
    l.topology_ = topology;
    l.fan_out_ = fan_out;
    l.broadcast_fan_out_ = topology == Topology::AdvStar ? broadcast_fan_out : 0;
    l.role_.assign(static_cast<size_t>(size), Role::Learner);
    l.parent_.assign(static_cast<size_t>(size), 0);
    l.role_[0] = Role::RootPs;
    l.role_[1] = Role::Stats;
    l.parent_[0] = l.parent_[1] = -1;
    // Nodes numbered 0, 1, ... in the order their first rank comes.
    std::map<int, int> number;
    for (int r = 0; r < size; ++r) {
        const auto it = number.emplace(node_of_rank[static_cast<size_t>(r)], static_cast<int>(number.size())).first;
        l.node_.push_back(it->second);
    }
    if (topology != Topology::Base) {
        std::vector<std::vector<int>> by_node(number.size());
        for (int r = 2; r < size; ++r) by_node[static_cast<size_t>(l.node_[static_cast<size_t>(r)])].push_back(r);
        for (size_t n = 0; n < by_node.size(); ++n) {
            const std::vector<int>& ranks = by_node[n];
            if (ranks.empty()) continue;
            if (ranks.size() == 1)
                throw std::runtime_error("--topology adv: node " + std::to_string(n) + " has only rank " +
                                         std::to_string(ranks[0]) + " besides ranks 0 and 1, and a leaf parameter "
                                         "server needs a learner on its node (give it more ranks, or set "
                                         "--ranks-per-node)");
            const int relay = ranks[0];
            const int i = static_cast<int>(l.relays_.size());
            l.role_[static_cast<size_t>(relay)] = Role::Relay;
            l.parent_[static_cast<size_t>(relay)] =
                fan_out == 0 || i < fan_out ? 0 : l.relays_[static_cast<size_t>(i / fan_out - 1)];
            l.relays_.push_back(relay);
            for (size_t k = 1; k < ranks.size(); ++k) l.parent_[static_cast<size_t>(ranks[k])] = relay;
        }
    }
    for (int r = 2; r < size; ++r)
        if (l.role_[static_cast<size_t>(r)] == Role::Learner) l.learners_.push_back(r);
    return l;
}

std::vector<int> RankLayout::children(int rank) const {
    std::vector<int> c;
    for (int r = 0; r < size(); ++r)
        if (parent_[static_cast<size_t>(r)] == rank) c.push_back(r);
    return c;
}

int RankLayout::learner_index(int rank) const {
    const auto it = std::find(learners_.begin(), learners_.end(), rank);
    return it == learners_.end() ? -1 : static_cast<int>(it - learners_.begin());
}

std::vector<int> RankLayout::learners_below(int rank) const {
    std::vector<int> below;
    for (int l : learners_) {
        int up = parent(l);
        while (up > 0 && up != rank) up = parent(up);
        if (up == rank) below.push_back(l);
    }
    return below;
}

// The broadcast tree is an F-ary heap over 0 (the root) and the learners 1..lambda (learner k is
// node k + 1): node v's parent is (v - 1) / F.
int RankLayout::broadcast_parent(int rank) const {
    const int k = learner_index(rank);
    if (broadcast_fan_out_ == 0 || k < 0) return -1;
    const int parent = k / broadcast_fan_out_;  // (v - 1) / F with v = k + 1
    return parent == 0 ? 0 : learners_[static_cast<size_t>(parent - 1)];
}

std::vector<int> RankLayout::broadcast_children(int rank) const {
    std::vector<int> c;
    if (broadcast_fan_out_ == 0) return c;
    const int v = rank == 0 ? 0 : learner_index(rank) + 1;
    if (v == 0 && rank != 0) return c;
    // In 64 bits, and only as far as there are learners: F may be far larger than lambda.
    const int64_t first = int64_t{broadcast_fan_out_} * v + 1, learners = static_cast<int64_t>(learners_.size());
    for (int64_t child = first; child < first + broadcast_fan_out_ && child <= learners; ++child)
        c.push_back(learners_[static_cast<size_t>(child - 1)]);
    return c;
}

std::vector<int> RankLayout::peers(int rank) const {
    std::vector<int> p = children(rank), below = broadcast_children(rank);
    p.insert(p.end(), below.begin(), below.end());
    for (int up : {parent(rank), broadcast_parent(rank)}) p.push_back(up);
    p.erase(std::remove_if(p.begin(), p.end(), [](int r) { return r <= 0; }), p.end());
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    return p;
}

std::string RankLayout::role_name(int rank) const {
    switch (role(rank)) {
        case Role::RootPs:
            return topology_ != Topology::Base ? "root parameter server" : "parameter server";
        case Role::Stats:
            return "statistics server";
        case Role::Relay:
            for (int c : children(rank))
                if (role(c) == Role::Relay) return "inner parameter server";
            return "leaf parameter server";
        case Role::Learner:
            break;
    }
    return "learner";
}

std::string RankLayout::describe() const {
    std::string text = "layout (" + topology_name(topology_) + "): rank 0 " + role_name(0) + ", rank 1 " +
                       role_name(1) + ", " + std::to_string(learners_.size()) + " learners";
    if (topology_ == Topology::Base) return text;
    text += ", " + std::to_string(relays_.size()) + " leaf parameter servers (fan-out " +
            (fan_out_ == 0 ? std::string("all to the root") : std::to_string(fan_out_)) + ")";
    if (broadcast_fan_out_ > 0) {
        text += "; weights broadcast from rank 0 to";
        for (int c : broadcast_children(0)) text += " " + std::to_string(c);
        text += ", each learner forwarding to " + std::to_string(broadcast_fan_out_) + " more";
    }
    for (int relay : relays_) {
        text += "\n  node " + std::to_string(node(relay)) + ": rank " + std::to_string(relay) + " " + role_name(relay) +
                " (parent " + std::to_string(parent(relay)) + "), learners";
        for (int c : children(relay))
            if (role(c) == Role::Learner) text += " " + std::to_string(c);
    }
    return text;
}

nlohmann::ordered_json RankLayout::to_json() const {
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (int r = 0; r < size(); ++r) {
        nlohmann::ordered_json one{{"rank", r}, {"role", role_name(r)}, {"node", node(r)}};
        if (parent(r) >= 0) one["parent"] = parent(r);
        if (broadcast_parent(r) >= 0) one["broadcast_parent"] = broadcast_parent(r);
        ranks.push_back(one);
    }
    nlohmann::ordered_json j{{"topology", topology_name(topology_)}, {"fan_out", fan_out_}};
    if (broadcast_fan_out_ > 0) j["broadcast_fan_out"] = broadcast_fan_out_;
    j["ranks"] = ranks;
    return j;
}

}  // namespace rudra::dist
