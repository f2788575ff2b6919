// The `auto` backend's cache file (JSON): whatever it holds, a lookup gives a usable choice or
// none, and says what was damaged, never an exception (a damaged cache is replaced, not fatal).
// The input is looked up under a fixed key and under each of its own top-level keys.
#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "session/conv_choices.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    static const std::string path = "/tmp/" + fuzz::kInputName + "-" + std::to_string(getpid()) + ".json";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                   static_cast<std::streamsize>(size));
    std::vector<std::string> keys{"conv mb1ic3ih8iw8oc4kh3kw3 t1"};
    const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
    if (j.is_object())
        for (const auto& item : j.items()) keys.push_back(item.key());
    for (const std::string& key : keys) {
        std::string damage;
        try {
            const auto choice = session::cached_choice(path, key, damage);
            if (choice) fuzz::require(choice->summary.find("(cached)") != std::string::npos, "a cached choice says so");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "fuzz: the cache lookup threw: %s\n", e.what());
            std::abort();
        }
    }
    unlink(path.c_str());
    return 0;
}
