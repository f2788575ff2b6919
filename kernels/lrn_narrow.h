// LRN within a channel for narrow planes (at most 16 columns: cifar10_full's norm1 and norm2)
// with AVX-512 and beta 0.75, one register per row. Nothing but y is stored: the backward pass
// computes the scale again from x, which costs less than writing it in the forward pass and
// reading it back, with y, in the backward one. Each returns false, doing nothing, where it
// does not apply; the caller then takes the general path (kernels/lrn.cpp).
#pragma once
#include "kernels/lrn.h"

namespace rudra::kernels {

bool lrn_forward_narrow(const float* x, const LrnGeometry& g, int num, float* y);
bool lrn_backward_narrow(const float* x, const float* dy, const LrnGeometry& g, int num, float* dx);

}  // namespace rudra::kernels
