// Convolution as im2col + one GEMM per group per image (Caffe's method). Images are spread over
// OpenMP threads, each with its own column buffer and weight-gradient accumulator, so that the
// small GEMMs of small images still keep every core busy.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv_geometry.h"
#include "kernels/gemm.h"
#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

using kernels::sgemm;
using kernels::Trans;

class ConvolutionLayer final : public Layer {
public:
    explicit ConvolutionLayer(LayerArgs& a) : Layer(a.name, a.phase) {
        ParamBlock p(a, "convolution_param");
        num_output_ = static_cast<int>(p->integer("num_output", 0, 1, 1 << 20));
        p->require("num_output");
        bias_term_ = p->boolean("bias_term", true);
        group_ = static_cast<int>(p->integer("group", 1, 1, 1 << 20));
        Dims2 k = read_dims2(*p, "kernel_size", "kernel_h", "kernel_w", 1, 1, true);
        Dims2 s = read_dims2(*p, "stride", "stride_h", "stride_w", 1, 1, false);
        Dims2 pad = read_dims2(*p, "pad", "pad_h", "pad_w", 0, 0, false);
        auto dil = p->integers("dilation", 1, 1 << 20);
        if (dil.size() > 2) p->fail("'dilation' given more than twice (2-D only)");
        geom_.kernel_h = k.h;
        geom_.kernel_w = k.w;
        geom_.stride_h = s.h;
        geom_.stride_w = s.w;
        geom_.pad_h = pad.h;
        geom_.pad_w = pad.w;
        geom_.dilation_h = dil.empty() ? 1 : static_cast<int>(dil[0]);
        geom_.dilation_w = dil.empty() ? 1 : static_cast<int>(dil.back());
        weight_filler_ = read_filler(p->message("weight_filler"), p->file(), name_ + " weight_filler");
        bias_filler_ = read_filler(p->message("bias_filler"), p->file(), name_ + " bias_filler");
        if (p->integer("axis", 1, 1, 1) != 1) p->fail("only axis 1 is supported");
        p->enumeration("engine", "DEFAULT", {"DEFAULT", "CAFFE", "CUDNN"});  // one CPU engine here
        p->boolean("force_nd_im2col", false);
        p->finish();
    }

    const char* type() const override { return "Convolution"; }

    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1 || b[0].rank() != 4) fail("needs one 4-D bottom (N, C, H, W)");
        num_ = b[0][0];
        geom_.channels = b[0][1];
        geom_.height = b[0][2];
        geom_.width = b[0][3];
        if (geom_.channels % group_ || num_output_ % group_)
            fail("channels (" + std::to_string(geom_.channels) + ") and num_output (" +
                 std::to_string(num_output_) + ") must be divisible by group (" + std::to_string(group_) + ")");
        if (geom_.out_h() < 1 || geom_.out_w() < 1)
            fail("kernel larger than the padded input " + b[0].str());
        param_decls_.push_back(
            {Shape{num_output_, geom_.channels / group_, geom_.kernel_h, geom_.kernel_w}, weight_filler_});
        if (bias_term_) param_decls_.push_back({Shape{num_output_}, bias_filler_});
        threads_ = std::max(1, omp_get_max_threads());
        col_floats_ = geom_.is_pointwise() ? 0 : static_cast<size_t>(geom_.col_rows()) * geom_.col_cols();
        grad_floats_ = static_cast<size_t>(param_decls_[0].shape.count()) + (bias_term_ ? num_output_ : 0);
        return {Shape{num_, num_output_, geom_.out_h(), geom_.out_w()}};
    }

    size_t scratch_floats() const override { return threads_ * (round16(col_floats_) + round16(grad_floats_)); }

    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        const float* x = bottom[0]->data;
        float* y = top[0]->data;
        for_images([&](int n, int t, int gemm_threads) {
            const float* col = column(x + n * in_count(), t);
            float* yn = y + n * out_count();
            for (int g = 0; g < group_; ++g)
                sgemm(Trans::No, Trans::No, m_g(), pixels(), k_g(), 1.0f, weight() + g * m_g() * k_g(), k_g(),
                      col + g * k_g() * pixels(), pixels(), 0.0f, yn + g * m_g() * pixels(), pixels(),
                      gemm_threads);
            if (bias_term_)
                for (int c = 0; c < num_output_; ++c) {
                    const float b = param_views_[1].data[c];
                    float* row = yn + c * pixels();
                    for (int i = 0; i < pixels(); ++i) row[i] += b;
                }
        });
    }

    void backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                  const std::vector<Blob*>& bottom) override {
        const float* x = bottom[0]->data;
        const float* dy = top[0]->diff;
        float* dx = propagate_down[0] ? bottom[0]->diff : nullptr;
        const int wcount = static_cast<int>(param_decls_[0].shape.count());
        const int team = std::min(threads_, num_);
        for (int t = 0; t < team; ++t) std::memset(grad_buffer(t), 0, sizeof(float) * grad_floats_);
        for_images([&](int n, int t, int gemm_threads) {
            float* acc = grad_buffer(t);  // this thread's dW then db
            const float* dyn = dy + n * out_count();
            const float* col = column(x + n * in_count(), t);
            for (int g = 0; g < group_; ++g)
                sgemm(Trans::No, Trans::Yes, m_g(), k_g(), pixels(), 1.0f, dyn + g * m_g() * pixels(), pixels(),
                      col + g * k_g() * pixels(), pixels(), 1.0f, acc + g * m_g() * k_g(), k_g(), gemm_threads);
            if (bias_term_)
                for (int c = 0; c < num_output_; ++c) {
                    const float* row = dyn + c * pixels();
                    float s = 0.0f;
                    for (int i = 0; i < pixels(); ++i) s += row[i];
                    acc[wcount + c] += s;
                }
            if (!dx) return;
            float* dxn = dx + n * in_count();
            float* dcol = geom_.is_pointwise() ? dxn : col_buffer(t);
            for (int g = 0; g < group_; ++g)
                sgemm(Trans::Yes, Trans::No, k_g(), pixels(), m_g(), 1.0f, weight() + g * m_g() * k_g(), k_g(),
                      dyn + g * m_g() * pixels(), pixels(), 0.0f, dcol + g * k_g() * pixels(), pixels(), gemm_threads);
            if (!geom_.is_pointwise()) kernels::col2im(dcol, geom_, dxn);
        });
        // Reduce the per-thread accumulators into the parameter gradients.
        float* dw = param_views_[0].diff;
        for (int t = 0; t < team; ++t) {
            const float* acc = grad_buffer(t);
            for (int i = 0; i < wcount; ++i) dw[i] += acc[i];
            if (bias_term_)
                for (int c = 0; c < num_output_; ++c) param_views_[1].diff[c] += acc[wcount + c];
        }
    }

private:
    // Runs f(image, thread, gemm_threads) for every image. With several images per thread team the
    // images are spread over OpenMP threads and each GEMM is single-threaded; with one image
    // the GEMM itself gets all threads, called outside any parallel region so that its
    // library can reuse its thread pool instead of nesting a new team.
    template <class F>
    void for_images(F&& f) {
        const int team = std::min(threads_, num_);
        if (team <= 1) {
            for (int n = 0; n < num_; ++n) f(n, 0, threads_);
            return;
        }
#pragma omp parallel for num_threads(team) schedule(static)
        for (int n = 0; n < num_; ++n) f(n, omp_get_thread_num(), 1);
    }

    static size_t round16(size_t n) { return (n + 15) / 16 * 16; }  // keep 64-byte alignment
    float* col_buffer(int t) const { return scratch_ + t * round16(col_floats_); }
    float* grad_buffer(int t) const { return scratch_ + threads_ * round16(col_floats_) + t * round16(grad_floats_); }
    const float* column(const float* image, int t) const {
        if (geom_.is_pointwise()) return image;
        kernels::im2col(image, geom_, col_buffer(t));
        return col_buffer(t);
    }
    const float* weight() const { return param_views_[0].data; }
    int m_g() const { return num_output_ / group_; }
    int k_g() const { return geom_.col_rows() / group_; }
    int pixels() const { return geom_.col_cols(); }
    long in_count() const { return static_cast<long>(geom_.channels) * geom_.height * geom_.width; }
    long out_count() const { return static_cast<long>(num_output_) * pixels(); }

    int num_output_ = 0, group_ = 1, num_ = 0, threads_ = 1;
    bool bias_term_ = true;
    kernels::ConvGeometry geom_;
    FillerSpec weight_filler_, bias_filler_;
    size_t col_floats_ = 0, grad_floats_ = 0;
};

}  // namespace

std::unique_ptr<Layer> make_convolution_layer(LayerArgs& a) { return std::make_unique<ConvolutionLayer>(a); }

}  // namespace rudra::nn
