#include <omp.h>

#include <algorithm>

#include "kernels/conv_autotune.h"
#include "kernels/gemm.h"
#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

using kernels::sgemm;
using kernels::Trans;

// y[N, O] = x[N, K] * W[O, K]^T + b. The bottom is flattened from axis 1.
class InnerProductLayer final : public Layer {
public:
    explicit InnerProductLayer(LayerArgs& a) : Layer(a.name, a.phase), options_(a.kernels) {
        spec_ = options_.conv_for(a.name);  // checked here, chosen in setup() (auto needs the shape)
        ParamBlock p(a, "inner_product_param");
        p->require("num_output");
        out_ = static_cast<int>(p->integer("num_output", 1, 1, 1 << 24));
        bias_term_ = p->boolean("bias_term", true);
        if (p->integer("axis", 1, 1, 1) != 1) p->fail("only axis 1 is supported");
        if (p->boolean("transpose", false)) p->fail("transpose: true is not supported");
        weight_filler_ = read_filler(p->message("weight_filler"), p->file(), name_ + " weight_filler");
        bias_filler_ = read_filler(p->message("bias_filler"), p->file(), name_ + " bias_filler");
        p->finish();
    }
    const char* type() const override { return "InnerProduct"; }
    std::string backend() const override { return backend_text_; }
    std::string precision() const override {
        const auto rounds = [](kernels::GemmBackend be) { return be == kernels::GemmBackend::OwnBf16; };
        return std::string(rounds(backend_) ? "bf16" : "fp32") +
               (rounds(backend_) == rounds(data_backend_) ? "" : rounds(data_backend_) ? "/bf16" : "/fp32");
    }
    std::vector<Shape> setup(const std::vector<Shape>& b) override {
        if (b.size() != 1 || b[0].rank() < 1) fail("needs one bottom");
        num_ = b[0][0];
        in_ = checked_cast<int>(b[0].count_from(1), "the inputs of each sample (" + b[0].str() + ")");
        choose_backends();
        param_decls_.push_back({Shape{out_, in_}, weight_filler_});
        if (bias_term_) param_decls_.push_back({Shape{out_}, bias_filler_});
        return {Shape{num_, out_}};
    }
    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        float* y = top[0]->data;
        sgemm(Trans::No, Trans::Yes, num_, out_, in_, 1.0f, bottom[0]->data, in_, param_views_[0].data, in_,
              0.0f, y, out_, 0, backend_);
        if (!bias_term_) return;
        const float* b = param_views_[1].data;
        for (int n = 0; n < num_; ++n)
            for (int o = 0; o < out_; ++o) y[n * out_ + o] += b[o];
    }
    void backward(const std::vector<Blob*>& top, const std::vector<bool>& down,
                  const std::vector<Blob*>& bottom) override {
        const float* dy = top[0]->diff;
        sgemm(Trans::Yes, Trans::No, out_, in_, num_, 1.0f, dy, out_, bottom[0]->data, in_, 1.0f,
              param_views_[0].diff, in_, 0, backend_);
        if (bias_term_) {
            float* db = param_views_[1].diff;
            for (int n = 0; n < num_; ++n)
                for (int o = 0; o < out_; ++o) db[o] += dy[n * out_ + o];
        }
        if (down[0])
            sgemm(Trans::No, Trans::No, num_, in_, out_, 1.0f, dy, out_, param_views_[0].data, in_, 0.0f,
                  bottom[0]->diff, in_, 0, data_backend_);
    }

private:
    // The backends the user chose for this layer (--conv-backend names layers of both kinds): one,
    // two ("onednn+blis": the second for backward-data), or `auto`: own_bf16 under --precision
    // bf16, else the fastest of own, BLIS and oneDNN on this shape, which the session answers
    // (session/conv_choices.h) or, when none is given, which is measured here. Small mini-batches
    // gain most: at 8 and 32 samples BLIS and oneDNN beat the own SGEMM on some of AlexNet's passes.
    void choose_backends() {
        const BackendPair pair =
            spec_ == "auto" && options_.bf16 ? BackendPair{"own_bf16", "own_bf16", ""} : backend_pair(spec_, [&] {
                const int threads = std::max(1, omp_get_max_threads());
                return options_.choose_auto_inner_product
                           ? options_.choose_auto_inner_product(name_, num_, in_, out_, threads)
                           : kernels::measure_inner_product_backends(num_, in_, out_, threads);
            });
        backend_ = gemm_backend_named(pair.main);
        data_backend_ = gemm_backend_named(pair.data);
        backend_text_ = kernels::gemm_backend_name(backend_);
        if (data_backend_ != backend_) (backend_text_ += '+') += kernels::gemm_backend_name(data_backend_);
        backend_text_ += pair.why;
    }
    // Names without a GEMM of their own (onednn_bf16) run on the own SGEMM.
    kernels::GemmBackend gemm_backend_named(const std::string& name) const {
        const kernels::GemmBackend be = name == "blis"        ? kernels::GemmBackend::Blis
                                        : name == "onednn"    ? kernels::GemmBackend::Onednn
                                        : name == "reference" ? kernels::GemmBackend::Reference
                                        : name == "own_bf16"  ? kernels::GemmBackend::OwnBf16
                                                              : kernels::GemmBackend::Own;
        if (!kernels::gemm_backend_available(be)) fail("GEMM backend '" + name + "' is not available in this build");
        return be;
    }

    int out_ = 0, in_ = 0, num_ = 0;
    bool bias_term_ = true;
    FillerSpec weight_filler_, bias_filler_;
    KernelOptions options_;  // read in setup()
    std::string spec_, backend_text_;
    kernels::GemmBackend backend_ = kernels::GemmBackend::Own;       // forward and backward-weights
    kernels::GemmBackend data_backend_ = kernels::GemmBackend::Own;  // backward-data
};

}  // namespace

std::unique_ptr<Layer> make_inner_product_layer(LayerArgs& a) { return std::make_unique<InnerProductLayer>(a); }

}  // namespace rudra::nn
