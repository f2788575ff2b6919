// Convolution as im2col + GEMM (Caffe's method) on the own SGEMM or on BLIS. With at least as
// many images as threads the images are spread over the threads, each with its own column
// buffer and weight-gradient accumulator, and every GEMM is single-threaded: small images make
// small GEMMs, and this keeps every core busy at any mini-batch above one. With fewer images
// the GEMMs themselves are threaded. A 1x1 stride-1 convolution reads the image as its column
// matrix and skips im2col.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/aligned_buffer.h"
#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "kernels/sgemm/sgemm.h"

namespace rudra::kernels {
namespace {

class GemmConv final : public ConvKernel {
public:
    GemmConv(const ConvProblem& p, GemmBackend backend, int threads)
        : p_(p), g_(p.geom), backend_(backend), own_packed_(backend == GemmBackend::Own && p.groups == 1),
          nr_(own_packed_ ? selected_micro_kernel().kernel.nr : 1), threads_(std::max(1, threads)),
          team_(std::min(threads_, p.num)),
          col_floats_(column_floats(g_, own_packed_, nr_)),
          grad_floats_(round16(static_cast<size_t>(p.out_channels) * k_g() + p.out_channels)),
          scratch_(std::max(1, team_) * (col_floats_ + grad_floats_)),
          packed_w_(own_packed_ ? packed_a_floats(selected_micro_kernel().kernel, m_g(), k_g()) : 0),
          packed_wt_(own_packed_ ? packed_a_floats(selected_micro_kernel().kernel, k_g(), m_g()) : 0) {}

    void forward(const float* x, const float* w, const float* bias, float* y) override {
        // The own SGEMM packs the weights once for all images.
        const MicroKernel& uk = selected_micro_kernel().kernel;
        if (own_packed_) pack_a_matrix(uk, Trans::No, m_g(), k_g(), w, k_g(), packed_w_.data());
        for_images([&](int n, int t, int gemm_threads) {
            const float* col = column(x + n * in_count(), t);
            float* yn = y + n * out_count();
            if (own_packed_)
                sgemm_prepacked_a(uk, m_g(), pixels(), k_g(), 1.0f, packed_w_.data(), Trans::No, col, pixels(), 0.0f,
                                  yn, pixels(), gemm_threads);
            else
                for (int g = 0; g < p_.groups; ++g)
                    sgemm(Trans::No, Trans::No, m_g(), pixels(), k_g(), 1.0f, w + g * m_g() * k_g(), k_g(),
                          col + g * k_g() * pixels(), pixels(), 0.0f, yn + g * m_g() * pixels(), pixels(),
                          gemm_threads, backend_);
            if (bias)
                for (int c = 0; c < p_.out_channels; ++c) {
                    const float b = bias[c];
                    float* row = yn + c * pixels();
                    for (int i = 0; i < pixels(); ++i) row[i] += b;
                }
        });
    }

    void backward_data(const float* dy, const float* w, float* dx) override {
        const MicroKernel& uk = selected_micro_kernel().kernel;
        if (own_packed_) pack_a_matrix(uk, Trans::Yes, k_g(), m_g(), w, k_g(), packed_wt_.data());
        for_images([&](int n, int t, int gemm_threads) {
            const float* dyn = dy + n * out_count();
            float* dxn = dx + n * in_count();
            float* dcol = g_.is_pointwise() ? dxn : col_buffer(t);
            if (own_packed_)
                sgemm_prepacked_a(uk, k_g(), pixels(), m_g(), 1.0f, packed_wt_.data(), Trans::No, dyn, pixels(), 0.0f,
                                  dcol, pixels(), gemm_threads);
            else
                for (int g = 0; g < p_.groups; ++g)
                    sgemm(Trans::Yes, Trans::No, k_g(), pixels(), m_g(), 1.0f, w + g * m_g() * k_g(), k_g(),
                          dyn + g * m_g() * pixels(), pixels(), 0.0f, dcol + g * k_g() * pixels(), pixels(),
                          gemm_threads, backend_);
            if (!g_.is_pointwise()) col2im(dcol, g_, dxn);
        });
    }

    void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
        const int wcount = p_.out_channels * k_g();
        // One thread accumulates straight into dw; a team each into its own buffer, then reduces.
        const bool direct = team_ <= 1;
        if (!direct)
            for (int t = 0; t < team_; ++t) std::memset(grad_buffer(t), 0, sizeof(float) * grad_floats_);
        for_images([&](int n, int t, int gemm_threads) {
            float* acc_w = direct ? dw : grad_buffer(t);
            float* acc_b = direct ? db : grad_buffer(t) + wcount;
            const float* dyn = dy + n * out_count();
            if (own_packed_) {
                // col^T straight into the SGEMM's packed-B layout: no separate packing pass.
                im2col_slivers(x + n * in_count(), g_, nr_, col_buffer(t));
                sgemm_packed_b_slivers(selected_micro_kernel().kernel, Trans::No, m_g(), k_g(), pixels(), 1.0f, dyn,
                                       pixels(), col_buffer(t), 1.0f, acc_w, k_g(), gemm_threads);
            } else {
                const float* col = column(x + n * in_count(), t);
                for (int g = 0; g < p_.groups; ++g)
                sgemm(Trans::No, Trans::Yes, m_g(), k_g(), pixels(), 1.0f, dyn + g * m_g() * pixels(), pixels(),
                          col + g * k_g() * pixels(), pixels(), 1.0f, acc_w + g * m_g() * k_g(), k_g(), gemm_threads,
                          backend_);
            }
            if (acc_b)
                for (int c = 0; c < p_.out_channels; ++c) {
                    const float* row = dyn + c * pixels();
                    float s = 0.0f;
                    for (int i = 0; i < pixels(); ++i) s += row[i];
                    acc_b[c] += s;
                }
        });
        if (direct) return;
        for (int t = 0; t < team_; ++t) {
            const float* acc = grad_buffer(t);
            for (int i = 0; i < wcount; ++i) dw[i] += acc[i];
            if (db)
                for (int c = 0; c < p_.out_channels; ++c) db[c] += acc[wcount + c];
        }
    }

private:
    // f(image, thread, gemm_threads) for every image (see the file comment).
    template <class F>
    void for_images(F&& f) {
        if (team_ <= 1) {
            for (int n = 0; n < p_.num; ++n) f(n, 0, threads_);
            return;
        }
#pragma omp parallel for num_threads(team_) schedule(static)
        for (int n = 0; n < p_.num; ++n) f(n, omp_get_thread_num(), 1);
    }

    static size_t round16(size_t n) { return (n + 15) / 16 * 16; }  // keeps 64-byte alignment
    // A column buffer holds the im2col matrix, or its transpose in nr-wide slivers (rows rounded
    // up to nr) for backward-weights on the own SGEMM.
    static size_t column_floats(const ConvGeometry& g, bool slivers, int nr) {
        const size_t K = static_cast<size_t>(g.col_rows()), P = static_cast<size_t>(g.col_cols());
        size_t n = g.is_pointwise() ? 0 : K * P;
        if (slivers) n = std::max(n, (K + nr - 1) / nr * nr * P);
        return round16(n);
    }
    float* col_buffer(int t) { return scratch_.data() + t * col_floats_; }
    float* grad_buffer(int t) { return scratch_.data() + team_ * col_floats_ + t * grad_floats_; }
    const float* column(const float* image, int t) {
        if (g_.is_pointwise()) return image;
        im2col(image, g_, col_buffer(t));
        return col_buffer(t);
    }
    int m_g() const { return p_.out_channels / p_.groups; }
    int k_g() const { return g_.col_rows() / p_.groups; }
    int pixels() const { return g_.col_cols(); }
    long in_count() const { return static_cast<long>(g_.channels) * g_.height * g_.width; }
    long out_count() const { return static_cast<long>(p_.out_channels) * pixels(); }

    ConvProblem p_;
    ConvGeometry g_;
    GemmBackend backend_;
    bool own_packed_;  // own SGEMM, one group: packed weights, backward-weights through im2col_slivers
    int nr_;
    int threads_, team_;
    size_t col_floats_, grad_floats_;
    AlignedBuffer scratch_;
    AlignedBuffer packed_w_, packed_wt_;  // the weights packed as A of forward and of backward-data
};

class ReferenceConv final : public ConvKernel {
public:
    explicit ReferenceConv(const ConvProblem& p) : p_(p) {}
    void forward(const float* x, const float* w, const float* bias, float* y) override {
        conv_forward_reference(p_, x, w, bias, y);
    }
    void backward_data(const float* dy, const float* w, float* dx) override {
        conv_backward_data_reference(p_, dy, w, dx);
    }
    void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
        conv_backward_weights_reference(p_, x, dy, dw, db);
    }

private:
    ConvProblem p_;
};

}  // namespace

std::unique_ptr<ConvKernel> make_gemm_conv(const ConvProblem& p, GemmBackend backend, int threads) {
    return std::make_unique<GemmConv>(p, backend, threads);
}

std::unique_ptr<ConvKernel> make_reference_conv(const ConvProblem& p) { return std::make_unique<ReferenceConv>(p); }

}  // namespace rudra::kernels
