// Which kernels a net's layers run on, as the user chose them (`--conv-backend`).
#pragma once
#include <functional>
#include <string>

#include "kernels/conv_autotune.h"

namespace rudra::nn {

struct KernelOptions {
    // "NAME" for every convolution, optionally followed by per-layer choices "LAYER=BACKEND" or
    // "LAYER=BACKEND+DATA_BACKEND" (the second for backward-data): "auto,conv1=onednn" or
    // "own,conv2=onednn+own". NAME: own, own_bf16, blis, onednn, onednn_bf16, reference, auto.
    std::string conv = "own";
    // --precision bf16: a layer on `own` (convolution or inner product) runs on own_bf16, the GEMM
    // with BF16 inputs and FP32 sums; an `auto` convolution measures own_bf16 and onednn_bf16 (an
    // auto inner product takes own_bf16; in FP32 it measures own, BLIS and oneDNN); layers named
    // on other backends stay FP32.
    // resolve_precision() sets it from `precision`, only where the CPU has BF16 dot products.
    bool bf16 = false;
    std::string precision = "fp32";  // --precision: fp32 or bf16

    // Sets bf16 from `precision` and the ISA gate; returns the line a command prints about it
    // ("" for fp32). Where the gate allows no BF16 micro-kernel but the reference one, bf16 is
    // refused with a line saying that training runs FP32.
    std::string resolve_precision();
    // The cache file of `auto` ("default": the user's cache directory; "": none). Read by the
    // session that builds the net (session/conv_choices.h), not by the layers.
    std::string auto_cache = "default";
    // How an `auto` layer gets its choice; unset: it measures, and nothing is kept.
    std::function<kernels::AutoChoice(const std::string& layer, const kernels::ConvProblem& p, int threads)>
        choose_auto;
    // The same for an `auto` inner-product layer (num samples of `inputs` values, `outputs` outputs).
    std::function<kernels::AutoChoice(const std::string& layer, int num, int inputs, int outputs, int threads)>
        choose_auto_inner_product;

    // The backend for layer `layer`: "auto", "NAME" or "NAME+DATA_NAME" (with bf16, own reads as
    // own_bf16). Throws
    // std::invalid_argument naming the bad part.
    std::string conv_for(const std::string& layer) const;
    // Checks the whole spec up front (same errors as conv_for).
    void validate() const;
    // Whether any layer is on `auto`.
    bool uses_auto() const;
};

// A layer's two backends as conv_for() gives its spec: `main` for forward and backward-weights,
// `data` for backward-data. "NAME" is both, "A+B" is A then B, "auto" is the answer of `ask`
// (called only then), with `why` saying what it measured ("" otherwise).
struct BackendPair {
    std::string main, data, why;
};
BackendPair backend_pair(const std::string& spec, const std::function<kernels::AutoChoice()>& ask);

}  // namespace rudra::nn
