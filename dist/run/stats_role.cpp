// The statistics server of a `rudra dist` job: evaluates the epochs' weights on the test set,
// writes metrics.jsonl and shows the run's progress.
#include "dist/run/roles.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "dist/ps/stats_server.h"
#include "dist/run/display.h"
#include "dist/run/methods.h"
#include "nn/atomic_file.h"
#include "session/metrics_log.h"

namespace rudra::dist::run {

namespace fs = std::filesystem;

namespace {

// A resumed run's metrics: epoch lines after the checkpoint's epoch are dropped (the run computes
// them again); returns the last epoch logged.
int64_t trim_metrics(const std::string& path, int64_t checkpoint_epoch) {
    std::ifstream in(path);
    if (!in) return 0;
    std::string kept, line;
    int64_t last = 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;  // a line torn by a kill
        if (j.value("event", "") == "epoch") {
            const int64_t e = j.value("epoch", int64_t{0});
            if (e > checkpoint_epoch) continue;
            last = std::max(last, e);
        }
        kept += line + "\n";
    }
    nn::write_file_atomically(path, kept);
    return last;
}

}  // namespace

nlohmann::ordered_json start_line(const char* event, const DistOptions& o, const Setup& s,
                                  const data::TrainTest& sets, int learners) {
    return {{"event", event},
            {"time", utc_now()},
            {"solver", o.solver},
            {"protocol", o.protocol},
            {"n", o.n},
            {"learners", learners},
            {"batch", o.batch},
            {"mode", learner_mode_name(o.mode)},
            {"epochs", o.epochs},
            {"lr_modulation", o.lr_modulation},
            {"momentum_compensation", o.momentum_compensation},
            {"warm_start", o.warm_start},
            {"base_lr", s.spec.solver.lr.base_lr},
            {"momentum", s.spec.solver.momentum},
            {"train_images", sets.train.size()},
            {"test_images", sets.test.size()},
            {"wire", o.wire},
            {"precision", o.kernels.bf16 ? "bf16" : "fp32"}};
}

int run_stats_role(const RoleContext& c) {
    const DistOptions& o = c.o;
    const Setup& s = c.s;
    dist::Transport& t = c.transport;
    const dist::Protocol& protocol = c.protocol;
    const data::TrainTest& sets = c.sets;
    const int lambda = protocol.learners();
    session::TrainingSession run(s.spec, sets, {.train_net = false, .test_net = true, .solver = false});
    s.release_train_images();
    const std::string metrics_path = (fs::path(o.output) / "metrics.jsonl").string();
    dist::StatsConfig sc;
    if (s.resume) sc.last_logged_epoch = trim_metrics(metrics_path, s.resume->epoch());
    session::MetricsLog log(metrics_path, s.resume.has_value());
    nlohmann::ordered_json start = start_line(s.resume ? "resume" : "start", o, s, sets, lambda);
    if (s.resume) {
        start["checkpoint"] = s.resume->path;
        start["from_epoch"] = s.resume->epoch();
        start["from_samples"] = s.resume->samples();
        start["checkpoint_learners"] = s.resume->learners();
    }
    if (const Method& m = method_of(protocol.kind()); m.record) m.record(o, lambda, start);
    if (!o.straggler.empty()) start["straggler"] = o.straggler;
    if (protocol.has_parameter_server()) start["layout"] = s.layout.to_json();
    log.write(start);
    sc.ps_rank = kPsRank;
    sc.has_ps = protocol.has_parameter_server();
    sc.timeline = s.timeline;
    sc.learners = lambda;
    if (protocol.has_parameter_server()) {
        sc.learners += static_cast<int>(s.layout.relays().size());  // a leaf PS's last report carries its traffic
        for (int r = 0; r < t.size(); ++r) sc.roles.push_back(s.layout.role_name(r));
    }
    sc.param_floats = run.params().size();
    sc.protocol = protocol.name();
    sc.start_samples = s.first_samples();
    sc.start_elapsed_s = s.elapsed_offset_s();
    DistDisplay display(o, static_cast<int64_t>(sets.train.size()), o.batch > 0 ? o.batch : s.train_layer().batch_size,
                        sc.start_samples);
    sc.on_epoch = [&](const nlohmann::ordered_json& line) { display.metrics_line(line); };
    sc.on_report = [&](int64_t minibatches, double loss) { display.learners_report(minibatches, loss); };
    sc.heartbeat = &c.heartbeat;
    sc.peer_timeout_s = o.peer_timeout;
    training_starts(t, s);
    dist::run_stats_server(
        t, sc,
        [&](const float* w) {
            std::memcpy(run.params().values(), w, sizeof(float) * run.params().size());
            const session::EvalResult r = run.evaluate();
            dist::TestResult t{r.accuracy, r.loss, r.top5, {}};
            for (const auto& l : r.layers) t.layers.emplace_back(l.name, l.accuracy);
            return t;
        },
        [&](const nlohmann::ordered_json& line) { log.write(line); });
    return 0;
}

}  // namespace rudra::dist::run
