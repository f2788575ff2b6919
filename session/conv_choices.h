// The `auto` backends' choices (convolution and inner-product layers) above the kernels: a JSON cache file of measured
// choices (one measurement per shape, thread count and micro-kernel on a machine), where the
// file is ($RUDRA_CACHE_DIR, $XDG_CACHE_HOME, ~/.cache), and the record of what each layer chose,
// so that one process can measure for a job and hand its choices to the others
// (nn::KernelOptions::with_choices).
#pragma once
#include <map>
#include <optional>
#include <string>

#include "kernels/conv_autotune.h"
#include "nn/kernel_options.h"

namespace rudra::session {

// $RUDRA_CACHE_DIR/conv_auto.json, else $XDG_CACHE_HOME/rudra/conv_auto.json, else
// $HOME/.cache/rudra/conv_auto.json; "" when none of them is set (nothing is cached then).
std::string default_auto_cache();

// The choice the cache file `path` holds under `key`, when it holds a usable one (known and
// available backends). A missing file is none; a damaged one is none too and is described in
// `damage`: never an exception.
std::optional<kernels::AutoChoice> cached_choice(const std::string& path, const std::string& key, std::string& damage);

class ConvChoices {
public:
    // cache: a file path, "default" (default_auto_cache()) or "" (measure, keep nothing).
    explicit ConvChoices(const std::string& cache);
    // The choice for a layer's problem: from the cache, else measured (and cached). A damaged
    // cache file is reported in the summary and replaced, never fatal.
    // bf16: among the BF16 backends (--precision bf16), cached under a key of their own.
    kernels::AutoChoice choose(const std::string& layer, const kernels::ConvProblem& p, int threads, bool bf16 = false);
    // The same for an inner-product layer (FP32 GEMM backends).
    kernels::AutoChoice choose_inner_product(const std::string& layer, int num, int inputs, int outputs, int threads);
    // Every choice made so far, by layer name.
    const std::map<std::string, kernels::AutoChoice>& chosen() const { return chosen_; }
    // `options` with each layer that chose written out ("conv1=onednn+own"), so that a process
    // building the same net takes the same backends without measuring.
    nn::KernelOptions resolved(const nn::KernelOptions& options) const;

private:
    template <class Measure>
    kernels::AutoChoice choose_keyed(const std::string& layer, const std::string& key, Measure measure);
    std::string path_;
    std::map<std::string, kernels::AutoChoice> chosen_;
};

// Options whose `auto` layers ask `choices` (which must outlive the nets built with them).
nn::KernelOptions with_choices(nn::KernelOptions options, ConvChoices& choices);

}  // namespace rudra::session
