// `auto` backend choice for a convolution: every available backend runs the shape's forward,
// backward-data and backward-weights passes a few times. One backend is chosen for forward plus
// backward-weights (the passes every trained layer runs) and one for backward-data (which the
// first layer of a net never runs), each the fastest at its passes. Choices are
// kept in a JSON cache file keyed by shape, threads and SGEMM micro-kernel, so each shape is
// measured once per machine.
#pragma once
#include <string>

#include "kernels/conv.h"

namespace rudra::kernels {

struct AutoChoice {
    ConvBackend backend;       // forward and backward-weights
    ConvBackend data_backend;  // backward-data
    std::string summary;  // e.g. "onednn 0.41 ms (own 0.52, blis 0.97)" plus "cached" when read back
};

// The cache file: $RUDRA_CACHE_DIR/conv_auto.json, else $XDG_CACHE_HOME/rudra/..., else
// $HOME/.cache/rudra/...; "" when none of them is set (nothing is cached then).
std::string default_autotune_cache();

// Benchdnn-style descriptor of the problem (mb..ic..ih..iw..oc..oh..ow..kh..kw..sh..sw..ph..pw..dh..dw..g..).
std::string conv_descriptor(const ConvProblem& p);

// cache_path "" measures without caching. A damaged cache file is reported in the summary and
// replaced, never fatal.
AutoChoice choose_conv_backend(const ConvProblem& p, int threads, const std::string& cache_path);

}  // namespace rudra::kernels
