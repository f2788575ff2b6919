// An operation's implementations in order of preference, most specialised first and a portable
// one last, as in oneDNN's implementation lists: each names the instruction-set level it is
// written for and says why it declines a problem. The first one that this build has, that the
// ISA gate allows and that takes the problem runs; the choice is made once, when the operation
// is set up, and it remembers why the earlier ones were passed over.
#pragma once
#include <stdexcept>
#include <string>

#include "kernels/isa.h"

namespace rudra::kernels {

template <class Problem, class Fn>
struct Impl {
    const char* name;
    Isa isa;
    Fn fn;  // nullptr: not in this build (another architecture's code)
    // "" when it takes the problem, else why not; nullptr: it takes every problem.
    std::string (*declines)(const Problem&) = nullptr;
};

struct ImplChoice {
    std::string name;  // the implementation that runs
    std::string why;   // "first choice", or why each one before it was passed over
    // "avx512_narrow", or "portable (avx512_narrow: needs avx512, ...)" when others were passed over.
    std::string describe() const { return why == "first choice" ? name : name + " (" + why + ")"; }
};

// "a, b: why; c: why": names passed over for the same reason share it.
inline void add_passed(std::string& passed, std::string& last_why, const char* name, const std::string& why) {
    if (!passed.empty() && why == last_why) {
        passed.insert(passed.size() - why.size() - 2, std::string(", ") + name);
        return;
    }
    passed += (passed.empty() ? "" : "; ") + std::string(name) + ": " + why;
    last_why = why;
}

// The first entry of `list` that takes the problem: why_not(entry) is "" for one that does, why
// not for one that does not, and "-" for one not worth a word (another architecture's). `choice`
// names it and why each one before it was passed over.
template <class Entry, size_t N, class WhyNot>
const Entry& first_taker(const Entry (&list)[N], WhyNot&& why_not, ImplChoice& choice) {
    std::string passed, last_why;
    for (const Entry& entry : list) {
        const std::string why = why_not(entry);
        if (why == "-") continue;
        if (why.empty()) {
            choice = {entry.name, passed.empty() ? "first choice" : passed};
            return entry;
        }
        add_passed(passed, last_why, entry.name, why);
    }
    throw std::logic_error("no implementation takes the problem (" + passed + ")");  // the last takes all
}

template <class Problem, class Fn, size_t N>
Fn choose_impl(const Impl<Problem, Fn> (&list)[N], const Problem& p, const IsaGate& gate, ImplChoice& choice) {
    const auto why_not = [&](const Impl<Problem, Fn>& impl) -> std::string {
        if (!impl.fn) return "-";
        if (!gate.allows(impl.isa)) return gate.refusal(impl.isa);
        return impl.declines ? impl.declines(p) : "";
    };
    return first_taker(list, why_not, choice).fn;
}

// The implementations the gate allows, in order (the first that takes a shape runs), then those
// it does not and why: "avx512_narrow, portable" or "portable (not allowed: avx512_narrow: needs
// avx512, above the cap RUDRA_ISA=avx2)". For listings (`rudra info`).
template <class Problem, class Fn, size_t N>
std::string describe_impls(const Impl<Problem, Fn> (&list)[N], const IsaGate& gate) {
    std::string allowed, refused, last_why;
    for (const Impl<Problem, Fn>& impl : list) {
        if (!impl.fn) continue;  // another architecture's
        if (gate.allows(impl.isa))
            allowed += (allowed.empty() ? "" : ", ") + std::string(impl.name);
        else
            add_passed(refused, last_why, impl.name, gate.refusal(impl.isa));
    }
    return refused.empty() ? allowed : allowed + " (not allowed: " + refused + ")";
}

}  // namespace rudra::kernels
