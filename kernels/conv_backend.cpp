// Backend names, availability, the factory, and the benchmark harness for one convolution.
#include <random>
#include <stdexcept>

#include "kernels/aligned_buffer.h"
#include "kernels/conv.h"

#include <algorithm>
#include "kernels/gemm.h"

namespace rudra::kernels {

std::unique_ptr<ConvKernel> make_gemm_conv(const ConvProblem& p, GemmBackend backend, int threads, const IsaGate& gate);
std::unique_ptr<ConvKernel> make_reference_conv(const ConvProblem& p);
#ifdef RUDRA_HAVE_DNNL
std::unique_ptr<ConvKernel> make_onednn_conv(const ConvProblem& p, bool bf16);
#endif

std::optional<ConvBackend> conv_backend_from_name(const std::string& name) {
    if (name == "own") return ConvBackend::Own;
    if (name == "blis") return ConvBackend::Blis;
    if (name == "onednn") return ConvBackend::Onednn;
    if (name == "reference") return ConvBackend::Reference;
    if (name == "own_bf16") return ConvBackend::OwnBf16;
    if (name == "onednn_bf16") return ConvBackend::OnednnBf16;
    return std::nullopt;
}

const char* conv_backend_name(ConvBackend backend) {
    switch (backend) {
        case ConvBackend::Own: return "own";
        case ConvBackend::Blis: return "blis";
        case ConvBackend::Onednn: return "onednn";
        case ConvBackend::Reference: return "reference";
        case ConvBackend::OwnBf16: return "own_bf16";
        case ConvBackend::OnednnBf16: return "onednn_bf16";
    }
    return "?";
}

bool conv_backend_available(ConvBackend backend) {
    switch (backend) {
        case ConvBackend::Blis: return gemm_backend_available(GemmBackend::Blis);
        case ConvBackend::Onednn:
        case ConvBackend::OnednnBf16:
#ifdef RUDRA_HAVE_DNNL
            return true;
#else
            return false;
#endif
        default: return true;
    }
}

double conv_workspace_floats(const ConvProblem& p, int threads, bool reorders) {
    const ConvGeometry& g = p.geom;
    const double col_rows = static_cast<double>(g.channels) / p.groups * g.kernel_h * g.kernel_w;
    const double col_cols = static_cast<double>(g.out_h()) * g.out_w();
    const double weights = static_cast<double>(p.out_channels) * col_rows;
    const double image = static_cast<double>(g.channels) * g.padded_h() * g.padded_w();
    const double per_thread = 2.0 * col_rows * col_cols + weights + image + static_cast<double>(p.out_channels) * col_cols;
    const double batch = static_cast<double>(p.num) * (static_cast<double>(g.channels) * g.height * g.width +
                                                       static_cast<double>(p.out_channels) * col_cols);
    return std::max(1, threads) * per_thread + 3.0 * weights + (reorders ? 2.0 * batch : 0.0) + 4096.0;
}

std::unique_ptr<ConvKernel> make_conv_kernel(const ConvProblem& p, ConvBackend backend, int threads,
                                             const IsaGate& gate) {
    if (!conv_backend_available(backend))
        throw std::runtime_error(std::string("convolution backend '") + conv_backend_name(backend) +
                                 "' is not in this build");
    switch (backend) {
        case ConvBackend::Own: return make_gemm_conv(p, GemmBackend::Own, threads, gate);
        case ConvBackend::Blis: return make_gemm_conv(p, GemmBackend::Blis, threads, gate);
        case ConvBackend::OwnBf16: return make_gemm_conv(p, GemmBackend::OwnBf16, threads, gate);
#ifdef RUDRA_HAVE_DNNL
        case ConvBackend::Onednn: return make_onednn_conv(p, false);
        case ConvBackend::OnednnBf16: return make_onednn_conv(p, true);
#endif
        default: return make_reference_conv(p);
    }
}

struct ConvBench::Buffers {
    AlignedBuffer x, w, b, y, dy, dx, dw, db;
};

ConvBench::ConvBench(const ConvProblem& p, ConvBackend backend, int threads)
    : buf_(std::make_unique<Buffers>()) {
    const ConvGeometry& g = p.geom;
    const size_t xs = static_cast<size_t>(p.num) * g.channels * g.height * g.width;
    const size_t ys = static_cast<size_t>(p.num) * p.out_channels * g.out_h() * g.out_w();
    const size_t ws = static_cast<size_t>(p.out_channels) * (g.channels / p.groups) * g.kernel_h * g.kernel_w;
    Buffers& b = *buf_;
    b.x = AlignedBuffer(xs);
    b.dx = AlignedBuffer(xs);
    b.y = AlignedBuffer(ys);
    b.dy = AlignedBuffer(ys);
    b.w = AlignedBuffer(ws);
    b.dw = AlignedBuffer(ws);
    b.b = AlignedBuffer(p.out_channels);
    b.db = AlignedBuffer(p.out_channels);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (AlignedBuffer* buf : {&b.x, &b.w, &b.b, &b.dy})
        for (size_t i = 0; i < buf->size(); ++i) buf->data()[i] = u(rng);
    kernel_ = make_conv_kernel(p, backend, threads);
}

ConvBench::~ConvBench() = default;

void ConvBench::run(const std::string& pass) {
    Buffers& b = *buf_;
    if (pass == "fwd") kernel_->forward(b.x.data(), b.w.data(), b.b.data(), b.y.data());
    else if (pass == "bwd_data") kernel_->backward_data(b.dy.data(), b.w.data(), b.dx.data());
    else if (pass == "bwd_weights") kernel_->backward_weights(b.x.data(), b.dy.data(), b.dw.data(), b.db.data());
    else throw std::invalid_argument("unknown pass '" + pass + "' (fwd, bwd_data, bwd_weights)");
}

}  // namespace rudra::kernels
