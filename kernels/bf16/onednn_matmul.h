// oneDNN's BF16 matmul (BF16 inputs, FP32 output), the reference point of `rudra bench`'s
// onednn_bf16 backend. A and B are converted to BF16 once, when it is made, as a framework that
// keeps BF16 tensors would hold them; run() times the product alone.
#pragma once
#ifdef RUDRA_HAVE_DNNL
#include <memory>
#include <string>

#include "kernels/gemm.h"

namespace rudra::kernels {

class OnednnBf16Gemm {
public:
    // C = op(A) op(B), row-major as kernels/gemm.h; throws std::runtime_error when oneDNN has no
    // implementation here.
    OnednnBf16Gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb);
    ~OnednnBf16Gemm();
    void run(float* c, int ldc);
    std::string implementation() const;  // oneDNN's name for what runs ("brg:avx512_core_bf16")

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace rudra::kernels
#endif
