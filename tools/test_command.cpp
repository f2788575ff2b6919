// rudra test: evaluate a snapshot on the test set.
#include <cstdio>
#include <stdexcept>

#include "nn/snapshot.h"
#include "tools/commands.h"

namespace rudra::tools {

int run_test(const TestOptions& o) {
    std::string net_path = o.model;
    if (is_solver_file(o.model)) net_path = nn::load_solver_spec(o.model).net;
    nn::NetSpec spec = nn::load_net_spec(net_path);
    data::TrainTest sets = load_data(o.data);
    nn::NetOptions opt;
    opt.kernels = o.kernels;
    opt.phase = nn::Phase::Test;
    opt.batch = o.batch;
    opt.data_chw = {sets.test.channels, sets.test.height, sets.test.width};
    nn::Net net(spec, opt);
    nn::Snapshot s = nn::read_snapshot(o.snapshot);
    if (s.layout_hash != net.params().layout_hash() || s.params.size() != net.params().size())
        throw std::runtime_error(o.snapshot + ": the snapshot's parameters do not match net " + net_path);
    std::copy(s.params.begin(), s.params.end(), net.params().values());
    std::vector<std::string> notes;
    std::vector<float> mean;
    const nn::LayerSpec* dl = spec.data_layer(nn::Phase::Test);
    data::Transform tf = dl ? make_transform(dl->transform, sets.train, mean, notes) : data::Transform{};
    for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
    EvalResult r = evaluate(net, sets.test, tf);
    std::printf("snapshot %s (iteration %llu): test_accuracy %.4f test_loss %.4f over %lld images\n",
                o.snapshot.c_str(), static_cast<unsigned long long>(s.iteration), r.accuracy, r.loss,
                static_cast<long long>(r.images));
    return 0;
}

}  // namespace rudra::tools
