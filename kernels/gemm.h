// Single-precision GEMM entry point used by every layer.
// Row-major: C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, lda/ldb/ldc are row strides
// of the matrices as stored (A is k x m when transposed).
#pragma once

namespace rudra::kernels {

enum class Trans { No, Yes };

// Who computes it: the engine's own packed SGEMM (kernels/sgemm), BLIS, oneDNN's dnnl_sgemm, the
// triple loop, or the own GEMM with BF16 inputs and FP32 sums (kernels/bf16/bgemm.h: not single
// precision, the mixed-precision path of --precision bf16).
enum class GemmBackend { Own, Blis, Onednn, Reference, OwnBf16 };

// threads: how many threads this one call may use. Layers that already run one GEMM per
// OpenMP thread pass 1; a lone large GEMM passes 0 (= all OpenMP threads).
void sgemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc, int threads = 1,
           GemmBackend backend = GemmBackend::Own);

// Triple loop, the reference every optimised path is tested against.
void sgemm_reference(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a,
                     int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Whether this build has the backend (BLIS and oneDNN are optional).
bool gemm_backend_available(GemmBackend backend);
// "own (avx512)", "blis", "onednn", "reference" or "own_bf16 (avx512_bf16)".
const char* gemm_backend_name(GemmBackend backend = GemmBackend::Own);

}  // namespace rudra::kernels
