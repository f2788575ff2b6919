// Run-time CPU features for the vector paths outside the SGEMM micro-kernels (which are chosen
// in sgemm/sgemm_dispatch.cpp). Detected once per process.
#pragma once

namespace rudra::kernels {

inline bool cpu_has_avx512f() {
#if defined(__x86_64__)
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
#else
    return false;
#endif
}

}  // namespace rudra::kernels
