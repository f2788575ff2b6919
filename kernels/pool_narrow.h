// Pooling of narrow planes (at most 32 columns in, 16 out: all of cifar10_full's pooling) with
// AVX-512, a whole row in registers. Each returns false, doing nothing, where it does not apply
// (no AVX-512, wider rows, a column stride other than 1 or 2); the callers then take the general
// path (kernels/pooling.cpp).
#pragma once
#include <cstdint>

#include "kernels/pooling.h"

namespace rudra::kernels {

bool avg_pool_forward_narrow(const float* x, const PoolGeometry& g, long planes, float* y);
bool avg_pool_backward_narrow(const float* dy, const PoolGeometry& g, long planes, float* dx);
bool max_pool_forward_narrow(const float* x, const PoolGeometry& g, long planes, float* y, int32_t* argmax);

}  // namespace rudra::kernels
