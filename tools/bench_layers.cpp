#include "tools/bench_layers.h"

#include <omp.h>

#include <cstdint>
#include <random>
#include <stdexcept>

#include "kernels/aligned_buffer.h"

namespace rudra::tools {

using kernels::AlignedBuffer;
using kernels::Trans;

struct LayerBench::Buffers {
    AlignedBuffer x, y, dy, dx, extra, weights, dweights;  // extra: argmax, LRN scale and work
};

namespace {

AlignedBuffer random_buffer(size_t floats, uint32_t seed) {
    AlignedBuffer b(floats);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < floats; ++i) b.data()[i] = u(rng);
    return b;
}

}  // namespace

LayerBench::LayerBench(const BenchProblem& p, kernels::GemmBackend backend, int threads)
    : p_(p), backend_(backend), threads_(threads), buf_(std::make_unique<Buffers>()) {
    const size_t planes = static_cast<size_t>(p.mb) * p.channels;
    switch (p.kind) {
        case ProblemKind::PoolMax:
        case ProblemKind::PoolAve: {
            const size_t in = planes * p.pool.height * p.pool.width,
                         out = planes * p.pool.pooled_h() * p.pool.pooled_w();
            buf_->x = random_buffer(in, 1);
            buf_->dx = AlignedBuffer(in);
            buf_->y = AlignedBuffer(out);
            buf_->dy = random_buffer(out, 2);
            buf_->extra = AlignedBuffer(out);  // argmax, as int32
            pool_.emplace(p.kind == ProblemKind::PoolMax ? kernels::PoolMethod::Max : kernels::PoolMethod::Average,
                          p.pool);
            run("fwd");  // argmax for the backward pass
            break;
        }
        case ProblemKind::LrnAcross:
        case ProblemKind::LrnWithin: {
            const size_t count = planes * p.lrn.height * p.lrn.width;
            buf_->x = random_buffer(count, 1);
            buf_->dy = random_buffer(count, 2);
            buf_->y = AlignedBuffer(count);
            buf_->dx = AlignedBuffer(count);
            lrn_.emplace(p.lrn, p.mb);
            buf_->extra = AlignedBuffer(lrn_->scratch_floats());
            run("fwd");
            break;
        }
        case ProblemKind::InnerProduct: {
            const size_t k = static_cast<size_t>(p.channels), o = static_cast<size_t>(p.ip_outputs);
            buf_->x = random_buffer(p.mb * k, 1);
            buf_->dy = random_buffer(p.mb * o, 2);
            buf_->weights = random_buffer(o * k, 3);
            buf_->dweights = AlignedBuffer(o * k);
            buf_->y = AlignedBuffer(p.mb * o);
            buf_->dx = AlignedBuffer(p.mb * k);
            break;
        }
        default:
            throw std::invalid_argument("LayerBench: '" + p.text + "' is not a pooling, LRN or inner-product problem");
    }
}

LayerBench::~LayerBench() = default;

bool LayerBench::has_pass(const BenchProblem& p, const std::string& pass) {
    return pass == "fwd" || pass == "bwd_data" || (pass == "bwd_weights" && p.kind == ProblemKind::InnerProduct);
}

void LayerBench::run(const std::string& pass) {
    omp_set_num_threads(threads_);  // the pooling and LRN loops take the OpenMP setting
    Buffers& b = *buf_;
    const long planes = static_cast<long>(p_.mb) * p_.channels;
    auto* argmax = reinterpret_cast<int32_t*>(b.extra.data());
    const bool fwd = pass == "fwd";
    switch (p_.kind) {
        case ProblemKind::PoolMax:
        case ProblemKind::PoolAve:
            if (fwd)
                pool_->forward(b.x.data(), planes, b.y.data(), argmax);
            else
                pool_->backward(b.dy.data(), argmax, planes, b.dx.data());
            return;
        case ProblemKind::LrnAcross:
        case ProblemKind::LrnWithin:
            if (fwd)
                lrn_->forward(b.x.data(), b.y.data(), b.extra.data());
            else
                lrn_->backward(b.x.data(), b.y.data(), b.dy.data(), b.dx.data(), b.extra.data());
            return;
        case ProblemKind::InnerProduct: {
            // As the layer does: y = x W^T, dx = dy W, dW += dy^T x (W is outputs x inputs).
            const int mb = p_.mb, k = p_.channels, o = p_.ip_outputs;
            if (fwd)
                kernels::sgemm(Trans::No, Trans::Yes, mb, o, k, 1.0f, b.x.data(), k, b.weights.data(), k, 0.0f,
                               b.y.data(), o, threads_, backend_);
            else if (pass == "bwd_data")
                kernels::sgemm(Trans::No, Trans::No, mb, k, o, 1.0f, b.dy.data(), o, b.weights.data(), k, 0.0f,
                               b.dx.data(), k, threads_, backend_);
            else
                kernels::sgemm(Trans::Yes, Trans::No, o, k, mb, 1.0f, b.dy.data(), o, b.x.data(), k, 1.0f,
                               b.dweights.data(), k, threads_, backend_);
            return;
        }
        default:
            return;
    }
}

std::string LayerBench::describe() const {
    if (pool_) return pool_->describe();
    if (lrn_) return lrn_->describe();
    return kernels::gemm_backend_name(backend_);
}

}  // namespace rudra::tools
