#include "dist/run/methods.h"

#include <algorithm>
#include <stdexcept>

namespace rudra::dist::run {

namespace {

using Kind = dist::Protocol::Kind;

void record_backup(const DistOptions& o, int, nlohmann::ordered_json& start) { start["backup"] = o.backup; }

void record_bound(const DistOptions& o, int, nlohmann::ordered_json& start) {
    if (o.max_staleness >= 0) start["max_staleness"] = o.max_staleness;
}

void record_k(const DistOptions& o, int learners, nlohmann::ordered_json& start) {
    start["k"] = o.k;
    record_bound(o, learners, start);
}

void record_tau(const DistOptions& o, int, nlohmann::ordered_json& start) { start["tau"] = o.tau; }

void record_easgd(const DistOptions& o, int learners, nlohmann::ordered_json& start) {
    start["tau"] = o.tau;
    start["beta"] = easgd_beta(o, learners);
}

}  // namespace

const std::vector<Method>& methods() {
    static const std::vector<Method> table{
        {Kind::HardSync, Family::ParameterServer, {"--backup"}, true, run_ps_learner_role, record_backup},
        {Kind::SoftSync, Family::ParameterServer, {"--max-staleness"}, true, run_ps_learner_role, record_bound},
        {Kind::Async, Family::ParameterServer, {"--max-staleness"}, true, run_ps_learner_role, record_bound},
        {Kind::KSync, Family::ParameterServer, {"--k"}, false, run_ps_learner_role, record_k},
        {Kind::KAsync, Family::ParameterServer, {"--k", "--max-staleness"}, true, run_ps_learner_role, record_k},
        {Kind::Easgd, Family::ParameterServer, {"--tau", "--beta"}, false, run_easgd_role, record_easgd},
        {Kind::AllReduce, Family::Decentralized, {}, false, run_allreduce_role, nullptr},
        {Kind::GossipPull, Family::Decentralized, {"--tau"}, false, run_gossip_role, record_tau},
        {Kind::GossipPush, Family::Decentralized, {"--tau"}, false, run_gossip_role, record_tau},
    };
    return table;
}

const Method& method_of(Kind kind) {
    for (const Method& m : methods())
        if (m.kind == kind) return m;
    throw std::logic_error(std::string("no method registered for protocol ") + dist::Protocol::kind_name(kind));
}

std::string method_names(const std::function<bool(const Method&)>& which) {
    std::vector<std::string> names;
    for (const Method& m : methods())
        if (which(m)) names.push_back(dist::Protocol::kind_name(m.kind));
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return list;
}

void check_method_options(const DistOptions& o, Kind kind) {
    const Method& mine = method_of(kind);
    for (const Method& m : methods())
        for (const std::string& option : m.options) {
            if (!o.given.count(option) ||
                std::find(mine.options.begin(), mine.options.end(), option) != mine.options.end())
                continue;
            throw std::runtime_error(option + " is a setting of --protocol " + method_names([&](const Method& t) {
                                         return std::find(t.options.begin(), t.options.end(), option) != t.options.end();
                                     }));
        }
}

}  // namespace rudra::dist::run
