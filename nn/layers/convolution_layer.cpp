// Convolution layer: reads Caffe's convolution_param and runs on a kernels::ConvKernel of the
// backend chosen for it (own im2col + SGEMM by default; see nn/kernel_options.h).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv.h"
#include "kernels/conv_autotune.h"
#include "nn/layers/layer_args.h"

namespace rudra::nn {
namespace {

class ConvolutionLayer final : public Layer {
public:
    explicit ConvolutionLayer(LayerArgs& a) : Layer(a.name, a.phase), options_(a.kernels) {
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
        if (const std::string why = kernels::geometry_problem(geom_); !why.empty()) {
            if (why.rfind("the kernel is larger", 0) == 0) fail("kernel larger than the padded input " + b[0].str());
            fail(why);
        }
        param_decls_.push_back(
            {Shape{num_output_, geom_.channels / group_, geom_.kernel_h, geom_.kernel_w}, weight_filler_});
        if (bias_term_) param_decls_.push_back({Shape{num_output_}, bias_filler_});
        return {Shape{num_, num_output_, geom_.out_h(), geom_.out_w()}};
    }

    // Two kernels at most (backward-data on another backend); oneDNN (or `auto`, which may
    // choose it) copies the mini-batch into its layouts.
    double own_floats() const override {
        const std::string name = options_.conv_for(name_);
        const bool reorders = name.find("onednn") != std::string::npos || name.find("auto") != std::string::npos;
        return 2.0 * kernels::conv_workspace_floats(problem(), threads(), reorders);
    }
    void prepare() override { make_kernel(); }

    void forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
        kernel_->forward(bottom[0]->data, param_views_[0].data, bias_term_ ? param_views_[1].data : nullptr,
                         top[0]->data);
    }

    void backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                  const std::vector<Blob*>& bottom) override {
        float* db = bias_term_ ? param_views_[1].diff : nullptr;
        if (!data_kernel_) {
            kernel_->backward(bottom[0]->data, top[0]->diff, param_views_[0].data,
                              propagate_down[0] ? bottom[0]->diff : nullptr, param_views_[0].diff, db);
            return;
        }
        kernel_->backward_weights(bottom[0]->data, top[0]->diff, param_views_[0].diff, db);
        if (propagate_down[0]) data_kernel_->backward_data(top[0]->diff, param_views_[0].data, bottom[0]->diff);
    }

    std::string precision() const override { return precision_; }
    // The backend and why (auto), then what runs each pass.
    std::string backend() const override {
        std::string s = backend_ + ": " + kernel_->describe();
        if (data_kernel_) s += "; bwd_data on " + data_kernel_->describe();
        return s;
    }

private:
    // The backend the user chose for this layer: one, two ("onednn+own": the second for
    // backward-data), or `auto`, which the session answers (session/conv_choices.h) or, when
    // none is given, which measures them on this shape.
    kernels::ConvProblem problem() const {
        kernels::ConvProblem p;
        p.num = num_;
        p.geom = geom_;
        p.out_channels = num_output_;
        p.groups = group_;
        return p;
    }
    static int threads() { return std::max(1, omp_get_max_threads()); }

    void make_kernel() {
        const kernels::ConvProblem p = problem();
        const int threads = this->threads();
        const std::string name = options_.conv_for(name_);
        const BackendPair pair = backend_pair(name, [&] {
            return options_.choose_auto ? options_.choose_auto(name_, p, threads)
                                        : kernels::measure_conv_backends(p, threads, options_.bf16);
        });
        backend_ = pair.main == pair.data ? pair.main : pair.main + "+" + pair.data;
        backend_ += pair.why;
        const kernels::ConvBackend main = backend_named(pair.main), data = backend_named(pair.data);
        const auto rounds = [](kernels::ConvBackend be) {
            return be == kernels::ConvBackend::OwnBf16 || be == kernels::ConvBackend::OnednnBf16;
        };
        precision_ = std::string(rounds(main) ? "bf16" : "fp32") +
                     (rounds(main) == rounds(data) ? "" : rounds(data) ? "/bf16" : "/fp32");
        kernel_ = kernels::make_conv_kernel(p, main, threads);
        // A second kernel only when backward-data runs elsewhere (its scratch is the cost).
        if (pair.data != pair.main) data_kernel_ = kernels::make_conv_kernel(p, data, threads);
    }

    kernels::ConvBackend backend_named(const std::string& name) const {
        const auto be = kernels::conv_backend_from_name(name);
        if (!be || !kernels::conv_backend_available(*be))
            fail("convolution backend '" + name + "' is not available in this build");
        return *be;
    }

    int num_output_ = 0, group_ = 1, num_ = 0;
    bool bias_term_ = true;
    kernels::ConvGeometry geom_;
    FillerSpec weight_filler_, bias_filler_;
    KernelOptions options_;  // read in setup()
    std::string backend_;
    std::string precision_ = "fp32";  // the products' inputs: see Layer::precision()
    std::unique_ptr<kernels::ConvKernel> kernel_, data_kernel_;  // data_kernel_: backward-data, when it differs
};

}  // namespace

std::unique_ptr<Layer> make_convolution_layer(LayerArgs& a) { return std::make_unique<ConvolutionLayer>(a); }

}  // namespace rudra::nn
