#include "dist/run/roles.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "base/clock.h"
#include "dist/transport/messages.h"
#include "kernels/sgemm/sgemm.h"
#include "nn/snapshot.h"

namespace rudra::dist::run {


namespace fs = std::filesystem;

void say(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

std::string resume_hint(const std::string& output) { return "go on with: rudra dist --resume " + output; }

bool replays_epoch(const Setup& s, int64_t samples_per_epoch) {
    return s.resume && s.resume->samples() % samples_per_epoch == 0;
}

Setup read_setup(const DistOptions& o) {
    Setup s;
    s.spec.solver = nn::load_solver_spec(o.solver);
    s.spec.net = nn::load_net_spec(s.spec.solver.net);
    if (!s.spec.net.data_layer(nn::Phase::Train))
        throw std::runtime_error(s.spec.solver.net + ": the net has no Data layer for phase TRAIN");
    s.spec.kernels = o.kernels;
    s.spec.batch = o.batch;
    s.spec.seed = o.seed >= 0 ? o.seed : (s.spec.solver.random_seed >= 0 ? s.spec.solver.random_seed : 1);
    if (o.base_lr > 0) s.spec.solver.lr.base_lr = o.base_lr;
    if (o.momentum >= 0) s.spec.solver.momentum = o.momentum;
    if (!o.warm_start.empty()) {
        s.warm = nn::read_snapshot(o.warm_start);
        s.start_samples = static_cast<int64_t>(s.warm.samples_seen);
    }
    return s;
}

std::string sgemm_identity() {
    const kernels::MicroKernel& k = kernels::selected_micro_kernel().kernel;
    return std::string(k.name) + " mc " + std::to_string(k.mc) + " kc " + std::to_string(k.kc) + " nc " +
           std::to_string(k.nc);
}

uint64_t sample_stream_seed(uint64_t run_seed, int stream) { return run_seed * 7919 + static_cast<uint64_t>(stream); }

std::vector<int> ranks_from(int first, int size) {
    std::vector<int> r;
    for (int i = first; i < size; ++i) r.push_back(i);
    return r;
}

// A number as a user wrote it: 1.5, not 1.500000.
std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// EASGD's moving rate: --beta, or 0.9 / learners (the EASGD paper's beta = 0.9 shared by p learners).
double easgd_beta(const DistOptions& o, int learners) { return o.beta > 0 ? o.beta : 0.9 / learners; }

std::function<dist::SilentPeer()> silent_peer(dist::Heartbeat& heartbeat, int size, double timeout) {
    return [&heartbeat, size, timeout] {
        dist::SilentPeer lost;
        for (int r = 1; r < size; ++r) {
            const double silent = heartbeat.silent_s(r);
            if (silent > timeout && silent > lost.silent_s) lost = dist::SilentPeer{r, silent};
        }
        return lost;
    };
}

std::string silent_ranks_text(const dist::Heartbeat& heartbeat, int size, double at_least_s) {
    std::string text;
    for (int r = 1; r < size; ++r) {
        const double silent = heartbeat.silent_s(r);
        if (silent <= at_least_s) continue;
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.1f s", silent);
        text += (text.empty() ? "" : ", ") + std::to_string(r) + " (" + seconds + ")";
    }
    return text.empty() ? "none" : text;
}

void training_starts(dist::Transport& t, const Setup& s) {
    const auto since_start = [&] {
        return seconds_since(s.process_start);
    };
    const double ready = since_start();
    // Every rank tells rank 0 it is ready and waits for rank 0's word: either every rank starts,
    // or rank 0 ends the job (a rank lost during start-up, dist/run/startup_watch.h). A barrier could
    // complete on some ranks and not on others when a rank dies inside it.
    std::vector<char> word;
    const auto late = [](int peer, const std::string& what) {
        return dist::PeerError(peer, what + " within the start-up allowance (--startup-timeout)");
    };
    if (t.rank() == kPsRank) {
        for (int r = 1; r < t.size(); ++r)
            if (!t.recv_while(r, dist::kReadyToTrain, word, s.keep_starting))
                throw late(r, "rank " + std::to_string(r) + " did not get ready");
        for (int r = 1; r < t.size(); ++r)
            if (!t.send_while(r, dist::kReadyToTrain, nullptr, 0, s.keep_starting))
                throw late(r, "rank " + std::to_string(r) + " did not take the word to start");
    } else if (!t.send_while(kPsRank, dist::kReadyToTrain, nullptr, 0, s.keep_starting) ||
               !t.recv_while(kPsRank, dist::kReadyToTrain, word, s.keep_starting)) {
        throw late(kPsRank, "rank 0 did not give the word to start");
    }
    if (s.started) s.started();
    // VmRSS: all resident memory; RssAnon: the part no other process maps.
    int64_t resident_kb = 0, private_kb = 0;
    if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        long kb = 0;
        while (std::fgets(line, sizeof line, f)) {
            if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) resident_kb = kb;
            if (std::sscanf(line, "RssAnon: %ld kB", &kb) == 1) private_kb = kb;
        }
        std::fclose(f);
    }
    const dist::RankStarted info{ready, since_start(), resident_kb, private_kb};
    t.send(kStatsRank, dist::kRankStarted, &info, sizeof info);
}

void write_checkpoint(const std::string& output, nn::Snapshot snapshot, const session::CheckpointFacts& facts,
                      const CheckpointLine& line) {
    snapshot.metadata = session::checkpoint_metadata(facts);
    const std::string path = checkpoint_path(output);
    nn::write_snapshot(path, snapshot);
    if (facts.reason != "epoch" && facts.reason != "periodic")
        say(line.who + ": checkpoint (" + facts.reason + ") at " + line.at + ", epoch " + std::to_string(facts.epoch) +
            (line.partial_epoch ? " and part of the next" : "") + ": " + path);
}

std::string write_final_snapshot(const std::string& output, const nn::Snapshot& snapshot) {
    const std::string path = final_snapshot_path(output);
    nn::write_snapshot(path, snapshot);
    return path;
}

StragglerSpec parse_straggler(const std::string& text, const std::vector<int>& learner_ranks) {
    StragglerSpec spec;
    if (text.empty()) return spec;
    const auto bad = [&] {
        std::string ranks;
        for (int r : learner_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        return std::runtime_error("--straggler must be RANK:FACTOR with RANK a learner's rank (" + ranks +
                                  ") and FACTOR a number >= 1, or RANK:FACTOR:P or all:FACTOR:P with P the "
                                  "probability in (0, 1] that a mini-batch is slowed, got '" + text + "'");
    };
    std::vector<std::string> parts;
    for (size_t from = 0;;) {
        const size_t colon = text.find(':', from);
        parts.push_back(text.substr(from, colon == std::string::npos ? std::string::npos : colon - from));
        if (colon == std::string::npos) break;
        from = colon + 1;
    }
    if (parts.size() < 2 || parts.size() > 3) throw bad();
    const auto number = [&](const std::string& part) {
        size_t used = 0;
        const double v = std::stod(part, &used);
        if (used != part.size() || !std::isfinite(v)) throw bad();
        return v;
    };
    try {
        if (parts[0] == "all") {
            spec.all = true;
        } else {
            size_t used = 0;
            spec.rank = std::stoi(parts[0], &used);
            if (used != parts[0].size() ||
                std::find(learner_ranks.begin(), learner_ranks.end(), spec.rank) == learner_ranks.end())
                throw bad();
        }
        spec.factor = number(parts[1]);
        if (parts.size() == 3) spec.probability = number(parts[2]);
    } catch (const std::logic_error&) {  // stoi/stod: not a number, out of range
        throw bad();
    }
    if (!(spec.factor >= 1.0) || !(spec.probability > 0.0 && spec.probability <= 1.0)) throw bad();
    return spec;
}

Straggle StragglerSpec::of(int r, uint64_t run_seed) const {
    if (!slows(r)) return {};
    return Straggle{factor, probability, run_seed * 104729 + static_cast<uint64_t>(r)};
}

std::string StragglerSpec::describe() const {
    if (!all && rank < 0) return "";
    const std::string times = number_text(factor) + " times (it sleeps)";
    if (probability >= 1.0)
        return all ? "every learner is slowed " + times
                   : "rank " + std::to_string(rank) + " is a straggler: its compute is slowed " + times;
    return (all ? std::string("every learner") : "rank " + std::to_string(rank)) + " is slowed " + times +
           " on a mini-batch with probability " + number_text(probability);
}

session::CheckpointEvery parse_checkpoint_every(const std::string& text) {
    size_t used = 0;
    double v = -1;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
    }
    const std::string unit = text.substr(std::min(used, text.size()));
    // Finite and within what an int64 of updates or a duration of seconds holds (inf, nan and
    // 1e30 would not convert).
    const double most = unit == "m" ? 1e7 : unit == "s" ? 1e9 : 1e15;
    if (!(v >= 0 && v <= most) || !(unit.empty() || unit == "s" || unit == "m") || (unit.empty() && v != std::floor(v)))
        throw std::runtime_error("--checkpoint-every must be N (updates, at most 1e15), Ns (seconds, at most 1e9), "
                                 "Nm (minutes, at most 1e7) or 0, got '" + text + "'");
    session::CheckpointEvery every;
    if (unit.empty()) every.steps = static_cast<int64_t>(v);
    else every.seconds = unit == "m" ? v * 60 : v;
    return every;
}

dist::LocalSgdWork local_sgd_work(session::TrainingSession& run, data::Prefetcher& prefetch, Straggle straggle,
                                  int64_t first_step) {
    dist::LocalSgdWork work;
    work.param_floats = run.params().size();
    work.weights = run.params().values();
    work.step = slowed([&run, &prefetch, step = first_step]() mutable { return run.step(prefetch.next(), step++); },
                       straggle);
    return work;
}

std::vector<int> decentralized_learner_ranks(int size) {
    std::vector<int> ranks = ranks_from(kStatsRank + 1, size);
    ranks.insert(ranks.begin(), kPsRank);
    return ranks;
}

}  // namespace rudra::dist::run
