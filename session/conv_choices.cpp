#include "session/conv_choices.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace rudra::session {
namespace {

nlohmann::json read_cache(const std::string& path, std::string& problem) {
    std::ifstream in(path);
    if (!in) return nlohmann::json::object();
    try {
        nlohmann::json j = nlohmann::json::parse(in);
        if (j.is_object()) return j;
        problem = path + " is not a JSON object; replacing it";
    } catch (const std::exception& e) {
        problem = path + " is damaged (" + e.what() + "); replacing it";
    }
    return nlohmann::json::object();
}

// Writes through a temporary file and a rename: readers never see half a file.
void write_cache(const std::string& path, const nlohmann::json& j) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
        std::ofstream out(tmp);
        if (!out) return;  // a cache that cannot be written only costs a re-measurement
        out << j.dump(1) << "\n";
        if (!out) {
            std::remove(tmp.c_str());
            return;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

std::optional<kernels::AutoChoice> cached_choice(const std::string& path, const std::string& key, std::string& damage) {
    const nlohmann::json cache = read_cache(path, damage);
    const auto entry = cache.find(key);
    if (entry == cache.end() || !entry->is_object()) return std::nullopt;
    const nlohmann::json& e = *entry;
    const auto text = [&](const char* field) {
        const auto it = e.find(field);
        return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const auto be = kernels::conv_backend_from_name(text("backend"));
    const auto dbe = kernels::conv_backend_from_name(text("data_backend"));
    if (!be || !dbe || !kernels::conv_backend_available(*be) || !kernels::conv_backend_available(*dbe)) return std::nullopt;
    return kernels::AutoChoice{*be, *dbe, text("summary") + " (cached)"};
}

std::string default_auto_cache() {
    if (const char* d = std::getenv("RUDRA_CACHE_DIR"); d && *d) return std::string(d) + "/conv_auto.json";
    if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/rudra/conv_auto.json";
    if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/rudra/conv_auto.json";
    return "";
}

ConvChoices::ConvChoices(const std::string& cache) : path_(cache == "default" ? default_auto_cache() : cache) {}

kernels::AutoChoice ConvChoices::choose(const std::string& layer, const kernels::ConvProblem& p, int threads,
                                        bool bf16) {
    return choose_keyed(layer, kernels::auto_cache_key(p, threads, bf16),
                        [&] { return kernels::measure_conv_backends(p, threads, bf16); });
}

kernels::AutoChoice ConvChoices::choose_inner_product(const std::string& layer, int num, int inputs, int outputs,
                                                      int threads) {
    return choose_keyed(layer, kernels::inner_product_cache_key(num, inputs, outputs, threads),
                        [&] { return kernels::measure_inner_product_backends(num, inputs, outputs, threads); });
}

template <class Measure>
kernels::AutoChoice ConvChoices::choose_keyed(const std::string& layer, const std::string& key, Measure measure) {
    using kernels::conv_backend_name;
    std::string damage;
    if (!path_.empty())
        if (std::optional<kernels::AutoChoice> cached = cached_choice(path_, key, damage)) return chosen_[layer] = *cached;
    kernels::AutoChoice choice = measure();
    if (!damage.empty()) choice.summary += "; " + damage;
    if (!path_.empty()) {
        // Read again: another process of the job (the statistics server, another role) may have
        // added its shapes while this one measured.
        std::string ignored;
        nlohmann::json cache = read_cache(path_, ignored);
        cache[key] = {{"backend", conv_backend_name(choice.backend)},
                      {"data_backend", conv_backend_name(choice.data_backend)},
                      {"summary", choice.summary}};
        write_cache(path_, cache);
    }
    return chosen_[layer] = choice;
}

nn::KernelOptions ConvChoices::resolved(const nn::KernelOptions& options) const {
    nn::KernelOptions out = options;
    out.choose_auto = nullptr;
    out.choose_auto_inner_product = nullptr;
    for (const auto& [layer, c] : chosen_) {
        out.conv += "," + layer + "=" + kernels::conv_backend_name(c.backend);
        if (c.data_backend != c.backend) (out.conv += '+') += kernels::conv_backend_name(c.data_backend);
    }
    return out;
}

nn::KernelOptions with_choices(nn::KernelOptions options, ConvChoices& choices) {
    options.choose_auto = [&choices, bf16 = options.bf16](const std::string& layer, const kernels::ConvProblem& p,
                                                          int threads) { return choices.choose(layer, p, threads, bf16); };
    options.choose_auto_inner_product = [&choices](const std::string& layer, int num, int inputs, int outputs,
                                                   int threads) {
        return choices.choose_inner_product(layer, num, inputs, outputs, threads);
    };
    return options;
}

}  // namespace rudra::session
