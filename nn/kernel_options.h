// Which kernels a net's layers run on, as the user chose them (`--conv-backend`).
#pragma once
#include <functional>
#include <string>

#include "kernels/conv_autotune.h"

namespace rudra::nn {

struct KernelOptions {
    // "NAME" for every convolution, optionally followed by per-layer choices "LAYER=BACKEND" or
    // "LAYER=BACKEND+DATA_BACKEND" (the second for backward-data): "auto,conv1=onednn" or
    // "own,conv2=onednn+own". NAME: own, blis, onednn, reference, auto.
    std::string conv = "own";
    // The cache file of `auto` ("default": the user's cache directory; "": none). Read by the
    // session that builds the net (session/conv_choices.h), not by the layers.
    std::string auto_cache = "default";
    // How an `auto` layer gets its choice; unset: it measures, and nothing is kept.
    std::function<kernels::AutoChoice(const std::string& layer, const kernels::ConvProblem& p, int threads)>
        choose_auto;

    // The backend for layer `layer`: "auto", "NAME" or "NAME+DATA_NAME". Throws
    // std::invalid_argument naming the bad part.
    std::string conv_for(const std::string& layer) const;
    // Checks the whole spec up front (same errors as conv_for).
    void validate() const;
    // Whether any layer is on `auto`.
    bool uses_auto() const;
};

}  // namespace rudra::nn
