// `rudra bench` for the layers other than convolution: pooling and LRN (the own kernels, limited
// by memory) and inner product (a GEMM per pass on any GEMM backend), with buffers of random
// values sized by the problem.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "kernels/gemm.h"
#include "kernels/lrn.h"
#include "kernels/pooling.h"
#include "tools/bench_problems.h"

namespace rudra::tools {

class LayerBench {
public:
    // backend: the GEMM backend of an inner product (ignored by pooling and LRN).
    LayerBench(const BenchProblem& p, kernels::GemmBackend backend, int threads);
    ~LayerBench();
    // fwd, bwd_data, and for an inner product bwd_weights.
    static bool has_pass(const BenchProblem& p, const std::string& pass);
    void run(const std::string& pass);
    std::string describe() const;  // the implementations that run

private:
    struct Buffers;
    BenchProblem p_;
    kernels::GemmBackend backend_;
    int threads_;
    std::unique_ptr<Buffers> buf_;
    std::optional<kernels::PoolKernel> pool_;
    std::optional<kernels::LrnKernel> lrn_;
};

}  // namespace rudra::tools
