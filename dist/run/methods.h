// The training methods of `rudra dist`, each registered once (dist/run/methods.cpp): the family
// that lays out its ranks, the options that belong to it, whether the parameter-server trees
// carry it, what the statistics server's first line records of it, and the role its learner
// ranks run. Its --protocol name and its update rule's predicates live with its kind
// (dist/ps/protocol.h). A new method is a role file and an entry here.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/ps/protocol.h"
#include "dist/run/roles.h"

namespace rudra::dist::run {

enum class Family {
    ParameterServer,  // rank 0 the PS (or a tree's root), rank 1 the statistics server, learners 2..
    Decentralized,    // rank 0 and ranks 2.. learners in one sum group, rank 1 the statistics server
};

struct Method {
    dist::Protocol::Kind kind;
    Family family;
    std::vector<std::string> options;  // the options only this method and others listing them take
    bool trees = false;                // --topology adv and adv* may carry it
    int (*learner)(const RoleContext&) = nullptr;
    // The method's own settings, added to the statistics server's "start" line (may be null).
    void (*record)(const DistOptions& o, int learners, nlohmann::ordered_json& start) = nullptr;
};

const std::vector<Method>& methods();
const Method& method_of(dist::Protocol::Kind kind);

// The names of the methods `which` accepts, as "easgd, gossip-pull and gossip-push".
std::string method_names(const std::function<bool(const Method&)>& which);

// The settings that only some methods take, checked against `kind`'s: an option given to a
// method that does not take it is an error naming the methods that do.
void check_method_options(const DistOptions& o, dist::Protocol::Kind kind);

}  // namespace rudra::dist::run
