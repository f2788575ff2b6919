#include "kernels/conv_autotune.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include <vector>

#include "kernels/bf16/bgemm.h"
#include "kernels/gemm.h"
#include "kernels/sgemm/sgemm.h"

namespace rudra::kernels {
namespace {

// Best of four runs of each pass, in seconds: {forward + backward-weights, backward-data}.
template <class Bench>
std::pair<double, double> time_passes(Bench& bench) {
    double main = 1e30, data = 1e30;
    for (int rep = 0; rep < 4; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        bench.run("fwd");
        bench.run("bwd_weights");
        auto t1 = std::chrono::steady_clock::now();
        bench.run("bwd_data");
        auto t2 = std::chrono::steady_clock::now();
        main = std::min(main, std::chrono::duration<double>(t1 - t0).count());
        data = std::min(data, std::chrono::duration<double>(t2 - t1).count());
    }
    return {main, data};
}

// The inner product's three GEMMs on one backend, as nn/layers/inner_product_layer.cpp runs them.
struct InnerProductBench {
    int num, in, out, threads;
    GemmBackend backend;
    std::vector<float> x, w, dy, y, dx, dw;
    InnerProductBench(int num_, int in_, int out_, int threads_, GemmBackend be)
        : num(num_), in(in_), out(out_), threads(threads_), backend(be), x(size(num, in)), w(size(out, in)),
          dy(size(num, out)), y(size(num, out)), dx(size(num, in)), dw(size(out, in)) {
        for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 7);
        for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 5);
        for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.01f * static_cast<float>(i % 3);
    }
    static size_t size(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }
    void run(const std::string& pass) {
        if (pass == "fwd")
            sgemm(Trans::No, Trans::Yes, num, out, in, 1.0f, x.data(), in, w.data(), in, 0.0f, y.data(), out, threads,
                  backend);
        else if (pass == "bwd_weights")
            sgemm(Trans::Yes, Trans::No, out, in, num, 1.0f, dy.data(), out, x.data(), in, 1.0f, dw.data(), in, threads,
                  backend);
        else
            sgemm(Trans::No, Trans::No, num, in, out, 1.0f, dy.data(), out, w.data(), in, 0.0f, dx.data(), in, threads,
                  backend);
    }
};

std::string fmt_ms(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", s * 1e3);
    return buf;
}

}  // namespace

std::string conv_descriptor(const ConvProblem& p) {
    const ConvGeometry& g = p.geom;
    std::ostringstream s;
    s << "mb" << p.num << "ic" << g.channels << "ih" << g.height << "iw" << g.width << "oc" << p.out_channels << "oh"
      << g.out_h() << "ow" << g.out_w() << "kh" << g.kernel_h << "kw" << g.kernel_w << "sh" << g.stride_h << "sw"
      << g.stride_w << "ph" << g.pad_h << "pw" << g.pad_w << "dh" << g.dilation_h - 1 << "dw" << g.dilation_w - 1
      << "g" << p.groups;
    return s.str();
}

// Part of every cache key: raised whenever a backend got faster or slower (2: the own backend's
// implicit-GEMM paths; 3: its bias gradient and A packing; 4: padded kernel rows skipped, AMD
// cache blocks; 5: gather tiles for strided and odd-width layers, grouped layers on the implicit
// tiles; 6: own_bf16's slivers straight from the widened image, its rotated backward-data), so
// that choices measured on older code are measured again.
constexpr int kCacheGeneration = 6;

// Times each available candidate's passes (time_passes on the bench `make_bench(backend)`
// returns) and keeps the fastest for forward plus backward-weights and for backward-data.
template <class MakeBench>
AutoChoice fastest_of(const std::vector<ConvBackend>& candidates, MakeBench make_bench) {
    ConvBackend best = candidates.front(), best_data = best;
    double best_s = 1e30, best_data_s = 1e30;
    std::string main_times, data_times;
    for (ConvBackend be : candidates) {
        auto bench = make_bench(be);
        if (!bench) continue;  // not in this build
        const auto [main_s, data_s] = time_passes(*bench);
        main_times += std::string(main_times.empty() ? "" : ", ") + conv_backend_name(be) + " " + fmt_ms(main_s);
        data_times += std::string(data_times.empty() ? "" : ", ") + conv_backend_name(be) + " " + fmt_ms(data_s);
        if (main_s < best_s) best_s = main_s, best = be;
        if (data_s < best_data_s) best_data_s = data_s, best_data = be;
    }
    return {best, best_data,
            std::string("fwd+bwd_weights ") + conv_backend_name(best) + " (ms: " + main_times + "), bwd_data " +
                conv_backend_name(best_data) + " (ms: " + data_times + ")"};
}

AutoChoice measure_conv_backends(const ConvProblem& p, int threads, bool bf16) {
    const std::vector<ConvBackend> candidates =
        bf16 ? std::vector<ConvBackend>{ConvBackend::OwnBf16, ConvBackend::OnednnBf16}
             : std::vector<ConvBackend>{ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn};
    return fastest_of(candidates, [&](ConvBackend be) {
        return conv_backend_available(be) ? std::make_unique<ConvBench>(p, be, threads) : nullptr;
    });
}

AutoChoice measure_inner_product_backends(int num, int inputs, int outputs, int threads) {
    const auto gemm = [](ConvBackend be) {
        return be == ConvBackend::Blis ? GemmBackend::Blis : be == ConvBackend::Onednn ? GemmBackend::Onednn : GemmBackend::Own;
    };
    return fastest_of({ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn}, [&](ConvBackend be) {
        return gemm_backend_available(gemm(be))
                   ? std::make_unique<InnerProductBench>(num, inputs, outputs, threads, gemm(be))
                   : nullptr;
    });
}

std::string inner_product_cache_key(int num, int inputs, int outputs, int threads) {
    return "ip:mb" + std::to_string(num) + "ic" + std::to_string(inputs) + "oc" + std::to_string(outputs) +
           " threads " + std::to_string(threads) + " sgemm " + selected_micro_kernel().kernel.name + " generation " +
           std::to_string(kCacheGeneration);
}

std::string auto_cache_key(const ConvProblem& p, int threads, bool bf16) {
    return conv_descriptor(p) + " threads " + std::to_string(threads) + " sgemm " +
           selected_micro_kernel().kernel.name + (bf16 ? std::string(" bf16 ") + selected_bf16_micro_kernel().name : "") +
           " generation " + std::to_string(kCacheGeneration);
}

}  // namespace rudra::kernels
