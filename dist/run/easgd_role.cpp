// A learner of EASGD: local steps with a solver of its own, an elastic exchange with the PS's
// centre every tau steps (dist/methods/easgd.h).
#include "dist/methods/easgd.h"
#include "dist/run/roles.h"

namespace rudra::dist::run {

int run_easgd_role(const RoleContext& c) {
    const Setup& s = c.s;
    // Each of its differences in the checkpoint's updates stands for tau mini-batches. A resumed
    // learner starts from the centre (its first pull), with fresh momentum.
    const int64_t taken = s.resume ? s.resume->applied(s.layout.learner_index(c.transport.rank())) * c.o.tau : 0;
    PsFamilyLearner learner(c, true, taken);
    const dist::LocalSgdWork work = local_sgd_work(learner.run, learner.prefetch, c.straggle, taken);
    dist::EasgdConfig ec;
    ec.ps_rank = kPsRank;
    ec.stats_rank = kStatsRank;
    ec.tau = c.o.tau;
    ec.wire = dist::wire_named(c.o.wire);
    ec.beta = static_cast<float>(easgd_beta(c.o, c.protocol.learners()));
    ec.timeline = s.timeline;
    training_starts(c.transport, s);
    dist::run_easgd_learner(c.transport, ec, work);
    return 0;
}

}  // namespace rudra::dist::run
