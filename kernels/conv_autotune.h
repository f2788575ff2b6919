// The `auto` backend's measurement for a convolution: every available backend runs the shape's
// forward, backward-data and backward-weights passes a few times. One backend is chosen for
// forward plus backward-weights (the passes every trained layer runs) and one for backward-data
// (which the first layer of a net never runs), each the fastest at its passes. Caching the
// choices, and deciding which process measures, is the caller's (session/conv_choices.h). Inner
// products are measured the same way on the GEMM backends.
#pragma once
#include <string>

#include "kernels/conv.h"

namespace rudra::kernels {

struct AutoChoice {
    ConvBackend backend;       // forward and backward-weights
    ConvBackend data_backend;  // backward-data
    std::string summary;  // e.g. "fwd+bwd_weights onednn (ms: own 0.52, blis 0.97, onednn 0.41), ..."
};

// Measures at the caller's OpenMP setting, which must be `threads`. bf16: among the backends with
// BF16 inputs (own_bf16, onednn_bf16), for --precision bf16.
AutoChoice measure_conv_backends(const ConvProblem& p, int threads, bool bf16 = false);

// The same for an inner product over `num` samples (y = x W^T, W outputs x inputs) on the GEMM
// backends (own, BLIS, oneDNN): its three products timed as the layer runs them, one backend
// kept for forward plus backward-weights and one for backward-data.
AutoChoice measure_inner_product_backends(int num, int inputs, int outputs, int threads);
std::string inner_product_cache_key(int num, int inputs, int outputs, int threads);

// Benchdnn-style descriptor of the problem (mb..ic..ih..iw..oc..oh..ow..kh..kw..sh..sw..ph..pw..dh..dw..g..).
std::string conv_descriptor(const ConvProblem& p);
// What a measured choice depends on: the shape, the threads, the SGEMM micro-kernel and the
// backends' code (a generation number raised when one got faster or slower).
std::string auto_cache_key(const ConvProblem& p, int threads, bool bf16 = false);

}  // namespace rudra::kernels
