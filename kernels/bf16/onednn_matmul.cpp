#include "kernels/bf16/onednn_matmul.h"

#include <stdexcept>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/bf16/bf16.h"
#include "kernels/onednn_isa.h"

namespace rudra::kernels {

using dnnl::memory;
using dt = memory::data_type;

struct OnednnBf16Gemm::State {
    dnnl::engine eng;
    dnnl::stream strm;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
    std::vector<bf16> a, b;
    memory a_mem, b_mem;
    memory::desc c_md;
    int m = 0, n = 0;
};

namespace {

// The op(X) rows x cols matrix stored row-major with leading dimension ld, transposed or not, as
// BF16 values of a dense copy with the same layout.
memory::desc bf16_desc(Trans t, int rows, int cols, int ld) {
    return memory::desc({rows, cols}, dt::bf16, t == Trans::No ? memory::dims{ld, 1} : memory::dims{1, ld});
}

std::vector<bf16> rounded(const float* x, size_t count) {
    std::vector<bf16> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = to_bf16(x[i]);
    return out;
}

}  // namespace

OnednnBf16Gemm::OnednnBf16Gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b,
                               int ldb)
    : s_(std::make_unique<State>()) {
    cap_onednn_isa();
    s_->eng = dnnl::engine(dnnl::engine::kind::cpu, 0);
    s_->strm = dnnl::stream(s_->eng);
    s_->m = m;
    s_->n = n;
    const memory::desc a_md = bf16_desc(ta, m, k, lda), b_md = bf16_desc(tb, k, n, ldb);
    s_->c_md = memory::desc({m, n}, dt::f32, memory::dims{n, 1});
    try {
        s_->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, s_->c_md), s_->eng);
    } catch (const dnnl::error& e) {
        throw std::runtime_error(std::string("oneDNN has no BF16 matmul on this CPU: ") + e.what());
    }
    s_->prim = dnnl::matmul(s_->pd);
    s_->a = rounded(a, static_cast<size_t>(ta == Trans::No ? m : k) * lda);
    s_->b = rounded(b, static_cast<size_t>(tb == Trans::No ? k : n) * ldb);
    s_->a_mem = memory(a_md, s_->eng, s_->a.data());
    s_->b_mem = memory(b_md, s_->eng, s_->b.data());
}

OnednnBf16Gemm::~OnednnBf16Gemm() = default;

void OnednnBf16Gemm::run(float* c, int ldc) {
    if (ldc != s_->n) throw std::invalid_argument("OnednnBf16Gemm: ldc must equal n");
    memory c_mem(s_->c_md, s_->eng, c);
    s_->prim.execute(s_->strm, {{DNNL_ARG_SRC, s_->a_mem}, {DNNL_ARG_WEIGHTS, s_->b_mem}, {DNNL_ARG_DST, c_mem}});
    s_->strm.wait();
}

std::string OnednnBf16Gemm::implementation() const { return s_->pd.impl_info_str(); }

}  // namespace rudra::kernels
