#include "nn/kernel_options.h"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "kernels/bf16/bgemm.h"
#include "kernels/conv.h"

namespace rudra::nn {
namespace {

bool known(const std::string& name) { return kernels::conv_backend_from_name(name).has_value(); }

std::vector<std::string> items(const std::string& spec) {
    std::vector<std::string> out;
    std::stringstream ss(spec);
    for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
    return out;
}

}  // namespace

void KernelOptions::validate() const {
    const auto parts = items(conv);
    if (parts.empty()) throw std::invalid_argument("--conv-backend is empty (own, own_bf16, blis, onednn, onednn_bf16, reference or auto)");
    for (size_t i = 0; i < parts.size(); ++i) {
        const std::string& p = parts[i];
        const size_t eq = p.find('=');
        const std::string name = eq == std::string::npos ? p : p.substr(eq + 1);
        if (eq == std::string::npos && i > 0)
            throw std::invalid_argument("--conv-backend '" + conv + "': only the first item may be a bare backend, '" +
                                        p + "' needs LAYER=BACKEND");
        if (eq == 0) throw std::invalid_argument("--conv-backend '" + conv + "': '" + p + "' has no layer name");
        const size_t plus = name.find('+');
        if (plus != std::string::npos && eq != std::string::npos) {
            const std::string first = name.substr(0, plus), second = name.substr(plus + 1);
            if (!known(first) || !known(second))
                throw std::invalid_argument("--conv-backend '" + conv + "': '" + p +
                                            "' needs two backends, for forward and backward-data (own, "
                                            "own_bf16, blis, onednn, onednn_bf16, reference)");
            continue;
        }
        if (name != "auto" && !known(name))
            throw std::invalid_argument("--conv-backend '" + conv + "': unknown backend '" + name +
                                        "' (own, own_bf16, blis, onednn, onednn_bf16, reference, auto)");
    }
}

std::string KernelOptions::conv_for(const std::string& layer) const {
    validate();
    const auto parts = items(conv);
    std::string chosen = parts[0].find('=') == std::string::npos ? parts[0] : "own";
    for (const std::string& p : parts) {
        const size_t eq = p.find('=');
        if (eq != std::string::npos && p.substr(0, eq) == layer) chosen = p.substr(eq + 1);
    }
    if (!bf16) return chosen;
    const auto in_bf16 = [](const std::string& name) { return name == "own" ? "own_bf16" : name; };
    const size_t plus = chosen.find('+');
    if (plus == std::string::npos) return in_bf16(chosen);
    return in_bf16(chosen.substr(0, plus)) + "+" + in_bf16(chosen.substr(plus + 1));
}

std::string KernelOptions::resolve_precision() {
    bf16 = false;
    if (precision == "fp32") return "";
    if (precision != "bf16") throw std::invalid_argument("--precision '" + precision + "': fp32 or bf16");
    const kernels::Bf16MicroKernel& uk = kernels::selected_bf16_micro_kernel();
    if (uk.isa == kernels::Isa::Reference)
        return std::string("precision: fp32, not bf16: the ISA gate (") + kernels::isa_gate().describe() +
               ") allows no BF16 dot products (" + kernels::bf16_micro_kernel_choice() + ")";
    bf16 = true;
    return std::string("precision: bf16 (own layers: BF16 GEMM inputs on the ") + uk.name +
           " micro-kernel, auto layers: the faster of own_bf16 and onednn_bf16; FP32 sums, weights and solver)";
}

bool KernelOptions::uses_auto() const {
    for (const std::string& p : items(conv))
        if (p.substr(p.find('=') + 1) == "auto") return true;  // find: npos + 1 = 0 for a bare name
    return false;
}

BackendPair backend_pair(const std::string& spec, const std::function<kernels::AutoChoice()>& ask) {
    if (spec == "auto") {
        const kernels::AutoChoice c = ask();
        return {kernels::conv_backend_name(c.backend), kernels::conv_backend_name(c.data_backend),
                " (auto: " + c.summary + ")"};
    }
    if (const size_t plus = spec.find('+'); plus != std::string::npos)
        return {spec.substr(0, plus), spec.substr(plus + 1), ""};
    return {spec, spec, ""};
}

}  // namespace rudra::nn
