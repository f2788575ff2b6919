// Convolution of one fixed shape on a chosen backend: the engine's own (im2col + own SGEMM),
// BLIS (im2col + BLIS), oneDNN (its JIT convolutions, through reorders from NCHW), or the direct
// reference. Layouts: x [num, channels, h, w], w [out, channels/groups, kh, kw], y [num, out, oh, ow].
// A kernel object owns its scratch memory, allocated when it is made: a training step allocates
// nothing.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "kernels/conv_reference.h"
#include "kernels/isa.h"

namespace rudra::kernels {

// OwnBf16: im2col + the own GEMM with BF16 inputs and FP32 sums (--precision bf16); OnednnBf16:
// oneDNN's convolutions on BF16 tensors (FP32 weight gradients).
enum class ConvBackend { Own, Blis, Onednn, Reference, OwnBf16, OnednnBf16 };

// own, blis, onednn, reference, own_bf16, onednn_bf16
std::optional<ConvBackend> conv_backend_from_name(const std::string& name);
const char* conv_backend_name(ConvBackend backend);
bool conv_backend_available(ConvBackend backend);  // BLIS and oneDNN are optional in a build

class ConvKernel {
public:
    virtual ~ConvKernel() = default;
    // y = conv(x, w) + bias (bias may be null)
    virtual void forward(const float* x, const float* w, const float* bias, float* y) = 0;
    // dx = conv_transpose(dy, w) (overwrites dx)
    virtual void backward_data(const float* dy, const float* w, float* dx) = 0;
    // dw += correlation(x, dy); db += sum of dy per channel (db may be null)
    virtual void backward_weights(const float* x, const float* dy, float* dw, float* db) = 0;
    // Both backward passes of one step over the same dy (dx may be null: no backward-data). A
    // backend that converts dy into a layout of its own does so once for both.
    virtual void backward(const float* x, const float* dy, const float* w, float* dx, float* dw, float* db) {
        backward_weights(x, dy, dw, db);
        if (dx) backward_data(dy, w, dx);
    }
    // Which implementation runs each pass, and why faster ones were passed over: for
    // `rudra time` and `rudra info`.
    virtual std::string describe() const = 0;
};

// `threads`: the OpenMP threads the kernel may use (at least 1). The own backend picks its
// implementations (micro-kernel, implicit tiles, transpose) from `gate`, and so does oneDNN
// where the process's gate is capped (kernels/isa.h).
std::unique_ptr<ConvKernel> make_conv_kernel(const ConvProblem& p, ConvBackend backend, int threads,
                                             const IsaGate& gate = isa_gate());

// An estimate, from above, of the floats a kernel of this problem holds of its own on any
// backend: per thread an im2col matrix, a gradient accumulator and a padded image; the weights
// packed three ways; with `reorders`, a copy of the mini-batch's input and output in another
// layout (oneDNN's). Known before the kernel exists, so that a net refuses a layer whose kernel
// would not fit before it allocates anything. In double: the geometry may be large.
double conv_workspace_floats(const ConvProblem& p, int threads, bool reorders);

// A kernel with random inputs of its own, for timing one pass ("fwd", "bwd_data", "bwd_weights").
// oneDNN sizes its team from the OpenMP setting, which the caller sets to `threads`.
class ConvBench {
public:
    ConvBench(const ConvProblem& p, ConvBackend backend, int threads);
    ~ConvBench();
    void run(const std::string& pass);
    std::string describe() const { return kernel_->describe(); }

private:
    struct Buffers;
    std::unique_ptr<Buffers> buf_;
    std::unique_ptr<ConvKernel> kernel_;
};

}  // namespace rudra::kernels
