// rudra test: evaluate a snapshot on the test set.
#include <cstdio>
#include <stdexcept>

#include "data/skip_log.h"
#include "nn/snapshot.h"
#include "session/metrics_log.h"
#include "session/training_session.h"
#include "tools/commands.h"

namespace rudra::tools {

int run_test(const TestOptions& o) {
    session::SessionSpec spec;
    spec.net = nn::load_net_spec(nn::is_solver_file(o.model) ? nn::load_solver_spec(o.model).net : o.model);
    spec.kernels = o.kernels;
    spec.test_batch = o.batch;
    const data::TrainTest sets = session::load_data(o.data, spec.net);
    session::TrainingSession run(spec, sets, {.train_net = false, .test_net = true, .solver = false});
    const nn::Snapshot s = nn::read_snapshot(o.snapshot);
    run.restore(s, o.snapshot, session::TrainingSession::History::Ignored);
    for (const auto& n : run.notes()) std::printf("note: %s\n", n.c_str());
    const session::EvalResult r = run.evaluate();
    std::printf("snapshot %s (iteration %llu): test_accuracy %.4f test_loss %.4f%s over %lld images\n",
                o.snapshot.c_str(), static_cast<unsigned long long>(s.iteration), r.accuracy, r.loss,
                session::top5_text(r).c_str(), static_cast<long long>(r.images));
    if (sets.skipped && sets.skipped->count() > 0) {
        for (const std::string& what : sets.skipped->take_fresh())
            std::fprintf(stderr, "rudra test: skipped a record (--bad-image skip): %s\n", what.c_str());
        std::printf("%lld record(s) skipped (--bad-image skip): not counted\n", static_cast<long long>(sets.skipped->count()));
    }
    for (const auto& l : r.layers)
        std::printf("Accuracy layer '%s' (top_k %d): %.4f\n", l.name.c_str(), l.top_k, l.accuracy);
    return 0;
}

}  // namespace rudra::tools
