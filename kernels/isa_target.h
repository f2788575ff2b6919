// How code for one instruction-set level is compiled: every function that uses a level's
// intrinsics carries its attribute, which enables exactly the features that kernels/isa.h's
// gate checks for that level (cpu_has). The rest of the build is compiled for the
// architecture's baseline, so an intrinsic outside such a function, or one that needs a feature
// its level does not name, fails to compile instead of faulting on a smaller CPU.
//
// Attributes rather than per-file -march flags: a file compiled with -mavx512f would also emit
// its inline and template functions (std::vector's, std::min's) with AVX-512 instructions, and
// the linker may keep that copy for the whole program.
#pragma once
#include <type_traits>
#include <utility>

#include "kernels/isa.h"

#if defined(__x86_64__)
#define RUDRA_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define RUDRA_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")))
#define RUDRA_TARGET_AVX512_BF16 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16")))
#endif

// Portable code compiled once per level. A body written once, as a struct with a static
// RUDRA_INLINE `run`, is inlined into one entry point per level, Compiled<level, Body>::run,
// which carries that level's target attribute: the compiler vectorises the same loops for the
// baseline, for AVX2 and for AVX-512, and the gate picks among them like among hand-written
// implementations ("portable", "portable_avx2", "portable_avx512"). What the body calls must be
// RUDRA_INLINE too, or it runs as baseline code. OpenMP regions belong in the caller: an entry
// point is one thread's share of the work.
#define RUDRA_INLINE __attribute__((always_inline)) inline

namespace rudra::kernels {

template <Isa Level, class Body>
struct Compiled;

template <class Body>
struct Compiled<Isa::Reference, Body> {
    template <class... A>
    static void run(A&&... a) {
        Body::run(std::forward<A>(a)...);
    }
};

#if defined(__x86_64__)
template <class Body>
struct Compiled<Isa::Avx2, Body> {
    template <class... A>
    RUDRA_TARGET_AVX2 static void run(A&&... a) {
        Body::run(std::forward<A>(a)...);
    }
};

template <class Body>
struct Compiled<Isa::Avx512, Body> {
    template <class... A>
    RUDRA_TARGET_AVX512 static void run(A&&... a) {
        Body::run(std::forward<A>(a)...);
    }
};
#endif

// f(std::integral_constant<Isa, level>{}) for a level this build compiles portable code for
// (Compiled above); a value-initialised result for any other.
template <class F>
auto for_portable_level(Isa level, F&& f) -> decltype(f(std::integral_constant<Isa, Isa::Reference>{})) {
    switch (level) {
        case Isa::Reference: return f(std::integral_constant<Isa, Isa::Reference>{});
#if defined(__x86_64__)
        case Isa::Avx2: return f(std::integral_constant<Isa, Isa::Avx2>{});
        case Isa::Avx512: return f(std::integral_constant<Isa, Isa::Avx512>{});
#endif
        default: return {};
    }
}

}  // namespace rudra::kernels
