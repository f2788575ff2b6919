// The parsers of `rudra` options that take more than a number: --checkpoint-every, --straggler,
// --topology, --lr-modulation, --protocol with --n, --conv-backend, and the validators of the
// numeric options. The first byte picks the parser, the rest is the option's text. A value is
// refused with a message that names its option, or it is within what the run can use.
#include <cmath>
#include <string>

#include "dist/ps/protocol.h"
#include "dist/run/roles.h"
#include "dist/ps/topology.h"
#include "nn/kernel_options.h"
#include "test/fuzz/fuzz_target.h"
#include "tools/cli_checks.h"

namespace {

void refused_naming(const std::exception& e, const char* option) {
    if (std::string(e.what()).find(option) != std::string::npos) return;
    std::fprintf(stderr, "fuzz: the refusal does not name %s: %s\n", option, e.what());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    if (size == 0) return 0;
    std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 8) {
        case 0:
            try {
                const auto every = dist::run::parse_checkpoint_every(text);
                fuzz::require(every.steps >= 0 && std::isfinite(every.seconds) && every.seconds >= 0,
                              "a checkpoint interval is finite and not negative");
            } catch (const std::exception& e) {
                refused_naming(e, "--checkpoint-every");
            }
            break;
        case 1:
            try {
                const auto spec = dist::run::parse_straggler(text, {2, 3, 5});
                fuzz::require(text.empty() ? !spec.slows(2) && !spec.slows(3) && !spec.slows(5)
                                           : (spec.all || spec.rank == 2 || spec.rank == 3 || spec.rank == 5) &&
                                                 std::isfinite(spec.factor) && spec.factor >= 1 &&
                                                 spec.probability > 0 && spec.probability <= 1,
                              "a straggler is a learner slowed at least once, with a probability");
            } catch (const std::exception& e) {
                refused_naming(e, "--straggler");
            }
            break;
        case 2:
            try {
                dist::parse_topology(text);
            } catch (const std::exception& e) {
                refused_naming(e, "--topology");
            }
            break;
        case 3:
            try {
                dist::parse_lr_modulation(text);
            } catch (const std::exception& e) {
                refused_naming(e, "modulation");
            }
            break;
        case 4: {
            const int n = text.empty() ? 1 : static_cast<signed char>(text.back());
            try {
                const dist::Protocol p = dist::Protocol::parse(text.substr(0, text.empty() ? 0 : text.size() - 1), 4, n);
                fuzz::require(p.learners() == 4 && p.gradients_per_update() >= 1, "a protocol's update takes gradients");
            } catch (const std::exception& e) {
                const std::string what = e.what();
                fuzz::require(what.find("protocol") != std::string::npos || what.find("--n") != std::string::npos ||
                                  what.find("learners") != std::string::npos,
                              "a protocol's refusal names it");
            }
            break;
        }
        case 5:
            try {
                nn::KernelOptions k;
                k.conv = text;
                k.validate();
            } catch (const std::exception& e) {
                refused_naming(e, "--conv-backend");
            }
            break;
        default: {
            // The numeric validators: empty means accepted, and then the value converts.
            for (const CLI::Validator& check :
                 {tools::checks::kPositiveInt, tools::checks::kNonNegativeInt, tools::checks::kPositiveNumber,
                  tools::checks::integer_in(0, 1000000, "a number of microseconds"),
                  tools::checks::number_in(0.0, 86400.0, true, false, "a number of seconds")}) {
                std::string value = text;
                const std::string why = check(value);
                if (why.empty()) {
                    const double v = std::stod(value);
                    fuzz::require(std::isfinite(v), "an accepted number is finite");
                } else {
                    fuzz::require(why.find("must be") == 0 && why.find("got '") != std::string::npos,
                                  "a refusal says what was wanted and what was given");
                }
            }
        }
    }
    return 0;
}
