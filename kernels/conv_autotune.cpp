#include "kernels/conv_autotune.h"

#include <chrono>
#include <cstdio>
#include <sstream>

#include <vector>

#include "kernels/bf16/bgemm.h"
#include "kernels/sgemm/sgemm.h"

namespace rudra::kernels {
namespace {

// Best of four runs of each pass, in seconds: {forward + backward-weights, backward-data}.
std::pair<double, double> time_passes(ConvBench& bench) {
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

AutoChoice measure_conv_backends(const ConvProblem& p, int threads, bool bf16) {
    ConvBackend best = bf16 ? ConvBackend::OwnBf16 : ConvBackend::Own, best_data = best;
    double best_s = 1e30, best_data_s = 1e30;
    std::string main_times, data_times;
    const std::vector<ConvBackend> candidates =
        bf16 ? std::vector<ConvBackend>{ConvBackend::OwnBf16, ConvBackend::OnednnBf16}
             : std::vector<ConvBackend>{ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn};
    for (ConvBackend be : candidates) {
        if (!conv_backend_available(be)) continue;
        ConvBench bench(p, be, threads);
        const auto [main_s, data_s] = time_passes(bench);
        main_times += std::string(main_times.empty() ? "" : ", ") + conv_backend_name(be) + " " + fmt_ms(main_s);
        data_times += std::string(data_times.empty() ? "" : ", ") + conv_backend_name(be) + " " + fmt_ms(data_s);
        if (main_s < best_s) best_s = main_s, best = be;
        if (data_s < best_data_s) best_data_s = data_s, best_data = be;
    }
    return {best, best_data,
            std::string("fwd+bwd_weights ") + conv_backend_name(best) + " (ms: " + main_times + "), bwd_data " +
                conv_backend_name(best_data) + " (ms: " + data_times + ")"};
}

std::string auto_cache_key(const ConvProblem& p, int threads, bool bf16) {
    return conv_descriptor(p) + " threads " + std::to_string(threads) + " sgemm " +
           selected_micro_kernel().kernel.name + (bf16 ? std::string(" bf16 ") + selected_bf16_micro_kernel().name : "") +
           " generation " + std::to_string(kCacheGeneration);
}

}  // namespace rudra::kernels
