// The parameter server role: answers weight requests (deferring hardsync requests until the
// next timestamp), feeds gradients to the UpdateRule, sends the weights to the statistics server
// at every epoch boundary, and after the last epoch stops every learner and waits for their
// last messages, so that all ranks end cleanly.
#pragma once
#include <cstdint>
#include <vector>

#include "dist/transport.h"
#include "dist/update_rule.h"

namespace rudra::dist {

struct PsConfig {
    std::vector<int> learner_ranks;
    int stats_rank = 1;
    int64_t samples_per_epoch = 0;  // an epoch: gradients covering the training set once
    int epochs = 1;
};

struct PsResult {
    int64_t updates = 0, samples = 0, dropped_gradients = 0;
    double elapsed_s = 0.0;
};

class ParameterServer {
public:
    ParameterServer(Transport& transport, UpdateRule& rule, nn::ParamStore& params, PsConfig config);
    PsResult run();

private:
    int learner_index(int rank) const;
    void reply(int rank, int64_t have_ts);
    void send_epoch_weights(int64_t epoch, bool final, double elapsed_s);

    Transport& t_;
    UpdateRule& rule_;
    nn::ParamStore& params_;
    PsConfig config_;
    std::vector<char> in_, out_;  // message buffers, reused
};

}  // namespace rudra::dist
