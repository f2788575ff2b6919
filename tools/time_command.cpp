// rudra time: per-layer forward and backward time at a given mini-batch (like `caffe time`).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "nn/net.h"
#include "session/conv_choices.h"
#include "nn/solver_spec.h"
#include "tools/commands.h"
#include "session/progress.h"

namespace rudra::tools {
namespace {

std::array<int, 3> parse_chw(const std::string& s) {
    std::array<int, 3> out{0, 0, 0};
    if (s.empty()) return out;
    std::stringstream ss(s);
    std::string part;
    int i = 0;
    while (std::getline(ss, part, ',')) {
        if (i == 3) throw std::runtime_error("--input-shape '" + s + "': expected C,H,W");
        try {
            size_t used = 0;
            out[i] = std::stoi(part, &used);
            if (used != part.size() || out[i] <= 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
            throw std::runtime_error("--input-shape '" + s + "': '" + part + "' is not a positive integer");
        }
        ++i;
    }
    if (i != 3) throw std::runtime_error("--input-shape '" + s + "': expected C,H,W");
    return out;
}

double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int run_time(const TimeOptions& o) {
    std::string net_path = o.model;
    if (nn::is_solver_file(o.model)) net_path = nn::load_solver_spec(o.model).net;
    nn::NetSpec spec = nn::load_net_spec(net_path);
    session::ConvChoices choices(o.kernels.auto_cache);
    nn::NetOptions opt;
    opt.kernels = session::with_choices(o.kernels, choices);
    if (o.phase != "train" && o.phase != "test") throw std::runtime_error("--phase must be train or test");
    opt.phase = o.phase == "train" ? nn::Phase::Train : nn::Phase::Test;
    opt.batch = o.batch;
    opt.data_chw = parse_chw(o.input_shape);
    if (opt.data_chw[0] == 0 && spec.data_layer(opt.phase))
        throw std::runtime_error(net_path + ": the net reads a Data layer; give the sample shape with --input-shape C,H,W");
    nn::Net net(spec, opt);
    net.params().fill(1);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    nn::Blob& x = net.input_data();
    for (int64_t i = 0; i < x.count(); ++i) x.data[i] = u(rng);
    if (nn::Blob* y = net.input_label())
        for (int64_t i = 0; i < y->count(); ++i) y->data[i] = 0.0f;

    const size_t L = net.num_layers();
    std::vector<double> fwd(L, 0.0), bwd(L, 0.0);
    net.forward();  // warm-up
    net.backward();
    const auto t_all = std::chrono::steady_clock::now();
    for (int it = 0; it < o.iterations; ++it) {
        net.params().zero_grads();
        for (size_t i = 0; i < L; ++i) {
            auto t = std::chrono::steady_clock::now();
            net.forward_layer(i);
            fwd[i] += ms_since(t);
        }
        for (size_t i = L; i-- > 0;) {
            auto t = std::chrono::steady_clock::now();
            net.backward_layer(i);
            bwd[i] += ms_since(t);
        }
    }
    const double total_ms = ms_since(t_all) / o.iterations;
    std::printf("net %s, mini-batch %d, %d iterations, %d threads, gemm %s\n", net_path.c_str(), net.batch(),
                o.iterations, omp_get_max_threads(),
                kernels::gemm_backend_name(o.kernels.bf16 ? kernels::GemmBackend::OwnBf16 : kernels::GemmBackend::Own));
    std::printf("ISA gate: %s\n", kernels::isa_gate().describe().c_str());
    std::printf("%-16s %-16s %12s %12s  %-9s  %s\n", "layer", "type", "forward ms", "backward ms", "products",
                "backend: implementation per pass (and why faster ones were passed over)");
    double f_sum = 0, b_sum = 0;
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < L; ++i) {
        const double f = fwd[i] / o.iterations, b = bwd[i] / o.iterations;
        f_sum += f;
        b_sum += b;
        std::printf("%-16s %-16s %12.3f %12.3f  %-9s  %s\n", net.layer(i).name().c_str(), net.layer(i).type(), f,
                    net.layer_needs_backward(i) ? b : 0.0, net.layer(i).precision().c_str(),
                    net.layer(i).backend().c_str());
        rows.push_back({{"layer", net.layer(i).name()}, {"type", net.layer(i).type()}, {"forward_ms", f},
                        {"backward_ms", b}, {"products", net.layer(i).precision()}, {"backend", net.layer(i).backend()}});
    }
    std::printf("%-33s %12.3f %12.3f\n", "total", f_sum, b_sum);
    std::printf("products: the inputs each layer's products round to (fwd+bwd_weights/bwd_data where they differ); "
                "activations, gradients, sums and weights are FP32\n");
    std::printf("forward-backward %.3f ms per iteration, %.0f images/s\n", total_ms, net.batch() * 1000.0 / total_ms);
    std::printf("learnable parameters: %s\n", session::with_thousands(net.params().learnable_count()).c_str());
    if (!o.json.empty()) {
        std::ofstream f(o.json);
        if (!f) throw std::runtime_error(o.json + ": cannot open for writing");
        f << nlohmann::json({{"event", "time"}, {"net", net_path}, {"batch", net.batch()}, {"threads", omp_get_max_threads()},
                             {"isa", kernels::isa_name(kernels::isa_gate().top())},
                             {"forward_backward_ms", total_ms}, {"images_per_s", net.batch() * 1000.0 / total_ms},
                             {"learnable_parameters", net.params().learnable_count()}, {"layers", rows}})
                 .dump()
          << '\n';
    }
    return 0;
}

}  // namespace rudra::tools
