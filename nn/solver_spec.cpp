#include "nn/solver_spec.h"

#include <cmath>
#include <filesystem>

#include "nn/config_error.h"
#include "nn/field_reader.h"

namespace rudra::nn {

const char* solver_type_name(SolverType t) {
    switch (t) {
        case SolverType::SGD: return "SGD";
        case SolverType::Nesterov: return "Nesterov";
        case SolverType::AdaGrad: return "AdaGrad";
    }
    return "?";
}

double LrPolicy::rate(int64_t iter) const {
    const double it = static_cast<double>(iter);
    if (name == "step") return base_lr * std::pow(gamma, std::floor(it / stepsize));
    if (name == "multistep") {
        int passed = 0;
        for (int64_t v : stepvalues) passed += iter >= v ? 1 : 0;
        return base_lr * std::pow(gamma, passed);
    }
    if (name == "inv") return base_lr * std::pow(1.0 + gamma * it, -power);
    if (name == "exp") return base_lr * std::pow(gamma, it);
    if (name == "poly") return base_lr * std::pow(std::max(0.0, 1.0 - it / std::max<int64_t>(max_iter, 1)), power);
    return base_lr;
}

SolverSpec parse_solver_spec(const std::string& text, const std::string& file) {
    TextMessage root = parse_prototxt(text, file);
    FieldReader r(root, file, "solver");
    SolverSpec s;
    s.file = file;
    constexpr double kBig = 1e30;
    constexpr long long kMaxIter = 1LL << 50;
    std::string net = r.string("net", "");
    if (net.empty()) {
        if (r.has("train_net") || r.has("net_param") || r.has("train_net_param"))
            r.fail("only 'net' is supported for naming the net (not train_net/test_net/net_param)");
        r.require("net");
    }
    namespace fs = std::filesystem;
    fs::path np(net);
    const fs::path dir = fs::path(file).parent_path();
    // Caffe's own solvers name nets from the Caffe root ("examples/cifar10/..."); a net kept
    // beside its solver is found too. A path the system refuses (too long, say) is not found.
    auto exists = [](const fs::path& p) {
        std::error_code ec;
        return fs::exists(p, ec);
    };
    if (np.is_relative() && !exists(np)) np = exists(dir / np) ? dir / np : dir / np.filename();
    if (!net.empty() && !exists(np)) r.fail(*r.field("net"), "net file '" + net + "' not found (looked in the working directory and in " + (dir.empty() ? "." : dir.string()) + ")");
    s.net = np.lexically_normal().string();

    s.lr.base_lr = r.number("base_lr", 0.01, 0.0, kBig);
    r.require("base_lr");
    s.lr.name = r.string("lr_policy", "fixed");
    if (s.lr.name != "fixed" && s.lr.name != "step" && s.lr.name != "multistep" && s.lr.name != "inv" &&
        s.lr.name != "exp" && s.lr.name != "poly")
        r.fail(*r.field("lr_policy"), "lr_policy '" + s.lr.name + "' is not supported (fixed, step, multistep, inv, exp, poly)");
    s.lr.gamma = r.number("gamma", 0.1, 0.0, kBig);
    s.lr.power = r.number("power", 1.0, -kBig, kBig);
    s.lr.stepsize = r.integer("stepsize", 0, 1, kMaxIter);
    for (long long v : r.integers("stepvalue", 0, kMaxIter)) s.lr.stepvalues.push_back(v);
    if (s.lr.name == "step" && s.lr.stepsize <= 0) r.fail("lr_policy \"step\" needs 'stepsize'");
    if (s.lr.name == "multistep" && s.lr.stepvalues.empty()) r.fail("lr_policy \"multistep\" needs 'stepvalue'");
    for (size_t i = 1; i < s.lr.stepvalues.size(); ++i)
        if (s.lr.stepvalues[i] <= s.lr.stepvalues[i - 1]) r.fail("'stepvalue' must increase");
    s.momentum = r.number("momentum", 0.0, 0.0, 1.0);
    s.weight_decay = r.number("weight_decay", 0.0, 0.0, kBig);
    s.delta = r.number("delta", 1e-8, 0.0, 1.0);
    s.max_iter = r.integer("max_iter", 0, 0, kMaxIter);
    s.lr.max_iter = s.max_iter;
    s.test_iter = r.integer("test_iter", 0, 0, kMaxIter);
    s.test_interval = r.integer("test_interval", 0, 0, kMaxIter);
    s.display = r.integer("display", 0, 0, kMaxIter);
    s.snapshot = r.integer("snapshot", 0, 0, kMaxIter);
    s.snapshot_prefix = r.string("snapshot_prefix", "");
    s.random_seed = r.integer("random_seed", -1, -1, (1LL << 62));
    std::string reg = r.string("regularization_type", "L2");
    if (reg != "L2") r.fail(*r.field("regularization_type"), "only L2 regularization is supported");

    std::string type;
    if (r.has("type") && r.has("solver_type")) r.fail("give 'type' or the older 'solver_type', not both");
    if (r.has("solver_type"))
        type = r.enumeration("solver_type", "SGD", {"SGD", "NESTEROV", "ADAGRAD"});
    else
        type = r.string("type", "SGD");
    if (type == "SGD") s.type = SolverType::SGD;
    else if (type == "Nesterov" || type == "NESTEROV") s.type = SolverType::Nesterov;
    else if (type == "AdaGrad" || type == "ADAGRAD") s.type = SolverType::AdaGrad;
    else r.fail(*r.field("type"), "solver type '" + type + "' is not supported (SGD, Nesterov, AdaGrad)");
    if (s.type == SolverType::AdaGrad && s.momentum != 0.0) r.fail("AdaGrad does not use momentum; set momentum: 0");

    const std::string not_needed = "not used by this CPU engine";
    for (const char* k : {"solver_mode", "device_id", "snapshot_format", "debug_info", "test_initialization",
                          "average_loss", "snapshot_after_train", "test_compute_loss", "snapshot_diff"})
        r.ignore(k, not_needed, s.notes);
    if (r.has("iter_size") && r.integer("iter_size", 1, 1, 1) != 1) r.fail("iter_size other than 1 is not supported");
    if (r.has("clip_gradients")) r.fail(*r.field("clip_gradients"), "clip_gradients is not supported");
    r.finish();
    return s;
}

SolverSpec load_solver_spec(const std::string& path) { return parse_solver_spec(read_text_file(path), path); }

bool is_solver_file(const std::string& path) {
    const TextMessage m = parse_prototxt_file(path);
    for (const auto& f : m.fields)
        if (f.name == "net" || f.name == "base_lr" || f.name == "train_net") return true;
    return false;
}

}  // namespace rudra::nn
