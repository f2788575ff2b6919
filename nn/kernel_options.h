// Which kernels a net's layers run on, as the user chose them (`--conv-backend`).
#pragma once
#include <string>

namespace rudra::nn {

struct KernelOptions {
    // "NAME" for every convolution, optionally followed by per-layer choices:
    // "auto,conv1=onednn". NAME: own, blis, onednn, reference, auto.
    std::string conv = "own";
    std::string auto_cache = "default";  // cache file of `auto`; "default": the user's cache dir; "": none

    // The backend name for layer `layer`. Throws std::invalid_argument naming the bad part.
    std::string conv_for(const std::string& layer) const;
    // Checks the whole spec up front (same errors as conv_for).
    void validate() const;
};

}  // namespace rudra::nn
