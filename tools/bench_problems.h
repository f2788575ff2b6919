// Benchmark problems as benchdnn-style descriptor strings.
//   convolution: mb128ic3ih32oc32oh32kh5ph2 (benchdnn's letters: mb ic ih iw oc oh ow kh kw sh sw
//                ph pw dh dw g, an optional trailing n"name"; missing width values copy the height
//                ones, missing oh/ow are computed, dilation is benchdnn's: 0 means none)
//   gemm:        m32n1024k75, with optional ta / tb for transposed A / B (row-major C = A B)
// '_' may separate fields (m75n1024k32ta_n"name").
#pragma once
#include <string>
#include <vector>

#include "kernels/conv_reference.h"
#include "kernels/gemm.h"

namespace rudra::tools {

struct GemmShape {
    int m = 0, n = 0, k = 0;
    kernels::Trans ta = kernels::Trans::No, tb = kernels::Trans::No;
};

struct BenchProblem {
    std::string text;  // as written (with the mini-batch substituted when swept)
    std::string name;  // n"..." or empty
    bool is_gemm = false;
    GemmShape gemm;
    kernels::ConvProblem conv;
    double flops() const;  // one forward pass (a conv's backward passes cost the same)
};

// Throws std::invalid_argument saying what is wrong with `text`.
BenchProblem parse_problem(const std::string& text);
// The same convolution at another mini-batch.
BenchProblem with_minibatch(const BenchProblem& p, int mb);
// Reads one problem per line; '#' starts a comment. Errors name file:line.
std::vector<BenchProblem> read_batch_file(const std::string& path);

}  // namespace rudra::tools
