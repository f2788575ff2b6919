#include "kernels/relu.h"

#include <omp.h>

#include <algorithm>

#include "kernels/isa_target.h"

namespace rudra::kernels {
namespace {

struct Forward {
    RUDRA_INLINE static void run(const float* x, float* y, long n, float s) {
        for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : s * x[i];
    }
};

struct Backward {
    RUDRA_INLINE static void run(const float* sign, const float* dy, float* dx, long n, float s) {
        for (long i = 0; i < n; ++i) dx[i] = sign[i] > 0.0f ? dy[i] : s * dy[i];
    }
};

// [begin, end) of this thread's share of n floats, in whole 64-byte lines.
void share(long n, long& begin, long& end) {
    const long threads = omp_get_num_threads(), lines = (n + 15) / 16, per = (lines + threads - 1) / threads;
    begin = std::min(n, per * 16 * omp_get_thread_num());
    end = std::min(n, begin + per * 16);
}

template <Isa L>
void forward(const float* x, float* y, long n, float s) {
#pragma omp parallel
    {
        long b, e;
        share(n, b, e);
        if (e > b) Compiled<L, Forward>::run(x + b, y + b, e - b, s);
    }
}

template <Isa L>
void backward(const float* sign, const float* dy, float* dx, long n, float s) {
#pragma omp parallel
    {
        long b, e;
        share(n, b, e);
        if (e > b) Compiled<L, Backward>::run(sign + b, dy + b, dx + b, e - b, s);
    }
}

template <Isa L>
const ReluKernel::Passes kPasses{forward<L>, backward<L>};

const ReluKernel::Passes* compiled_for(Isa level) {
    return for_portable_level(level, [](auto l) { return &kPasses<decltype(l)::value>; });
}

struct AnyShape {};

struct List {
    Impl<AnyShape, const ReluKernel::Passes*> entries[3];
};

const List& list() {
    static const List l{{{"portable_avx512", Isa::Avx512, compiled_for(Isa::Avx512)},
                         {"portable_avx2", Isa::Avx2, compiled_for(Isa::Avx2)},
                         {"portable", Isa::Reference, compiled_for(Isa::Reference)}}};
    return l;
}

}  // namespace

ReluKernel::ReluKernel(float slope, const IsaGate& gate) : slope_(slope) {
    passes_ = choose_impl(list().entries, AnyShape{}, gate, choice_);
}

std::string ReluKernel::implementations(const IsaGate& gate) { return describe_impls(list().entries, gate); }

void ReluKernel::forward(const float* x, float* y, long n) const { passes_->forward(x, y, n, slope_); }

void ReluKernel::backward(const float* sign, const float* dy, float* dx, long n) const {
    passes_->backward(sign, dy, dx, n, slope_);
}

std::string ReluKernel::describe() const { return choice_.describe(); }

}  // namespace rudra::kernels
