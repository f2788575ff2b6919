#include "kernels/gemm.h"

#include "kernels/bf16/bgemm.h"

#include <omp.h>

#include <stdexcept>
#include <string>

#include "kernels/sgemm/sgemm.h"

#ifdef RUDRA_HAVE_BLIS
#include <blis.h>
#endif
#ifdef RUDRA_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

#include "kernels/onednn_isa.h"
#endif

namespace rudra::kernels {

void sgemm_reference(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a,
                     int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
            double sum = 0.0;
            for (int p = 0; p < k; ++p) {
                float av = ta == Trans::No ? a[i * lda + p] : a[p * lda + i];
                float bv = tb == Trans::No ? b[p * ldb + j] : b[j * ldb + p];
                sum += static_cast<double>(av) * bv;
            }
            float prior = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
            c[i * ldc + j] = static_cast<float>(alpha * sum) + prior;
        }
    }
}

namespace {

#ifdef RUDRA_HAVE_BLIS
void sgemm_blis(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc, int threads) {
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(threads > 0 ? threads : omp_get_max_threads(), &rntm);
    float al = alpha, be = beta;
    bli_sgemm_ex(ta == Trans::Yes ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 tb == Trans::Yes ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &al,
                 const_cast<float*>(a), lda, 1, const_cast<float*>(b), ldb, 1, &be, c, ldc, 1,
                 nullptr, &rntm);
}
#endif

}  // namespace

void sgemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc, int threads, GemmBackend backend) {
    if (m <= 0 || n <= 0) return;
    switch (backend) {
        case GemmBackend::Own:
            sgemm_packed(selected_micro_kernel().kernel, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                         threads);
            return;
        case GemmBackend::Blis:
#ifdef RUDRA_HAVE_BLIS
            sgemm_blis(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
            return;
#else
            throw std::runtime_error("this build has no BLIS (apt-get install libblis-openmp-dev and rebuild)");
#endif
        case GemmBackend::Onednn:
#ifdef RUDRA_HAVE_DNNL
            // dnnl_sgemm is row-major and sizes its team from the OpenMP setting.
            cap_onednn_isa();
            if (dnnl_sgemm(ta == Trans::Yes ? 'T' : 'N', tb == Trans::Yes ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                           beta, c, ldc) != dnnl_success)
                throw std::runtime_error("dnnl_sgemm failed");
            return;
#else
            throw std::runtime_error("this build has no oneDNN (apt-get install libdnnl-dev and rebuild)");
#endif
        case GemmBackend::Reference:
            sgemm_reference(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return;
        case GemmBackend::OwnBf16:
            gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
            return;
    }
}

bool gemm_backend_available(GemmBackend backend) {
#ifndef RUDRA_HAVE_BLIS
    if (backend == GemmBackend::Blis) return false;
#endif
#ifndef RUDRA_HAVE_DNNL
    if (backend == GemmBackend::Onednn) return false;
#endif
    return true;
}

const char* gemm_backend_name(GemmBackend backend) {
    switch (backend) {
        case GemmBackend::Own: {
            static const std::string name = std::string("own (") + selected_micro_kernel().kernel.name + ")";
            return name.c_str();
        }
        case GemmBackend::Blis: return "blis";
        case GemmBackend::Onednn: return "onednn";
        case GemmBackend::Reference: return "reference";
        case GemmBackend::OwnBf16: {
            static const std::string name = std::string("own_bf16 (") + selected_bf16_micro_kernel().name + ")";
            return name.c_str();
        }
    }
    return "?";
}

}  // namespace rudra::kernels
