// Kernel problems as benchdnn-style descriptor strings: the one grammar of `rudra bench`, its batch
// files, the tests and the `auto` cache.
//   convolution: mb128ic3ih32oc32oh32kh5ph2 (benchdnn's letters: mb ic ih iw oc oh ow kh kw sh sw
//                ph pw dh dw g, an optional trailing n"name"; missing width values copy the height
//                ones, missing oh/ow are computed, dilation is benchdnn's: 0 means none)
//   gemm:        m32n1024k75, with optional ta / tb for transposed A / B (row-major C = A B)
//   layers, after a kind and a colon, benchdnn's letters again:
//     pool_max:mb128ic32ih32kh3sh2, pool_ave:...  (mb ic ih iw kh kw sh sw ph pw; Caffe's sizes)
//     lrn_across:mb128ic32ih16ls5, lrn_within:... (ls: local size; alpha 5e-5, beta 0.75, k 1)
//     ip:mb128ic1024oc10                          (inner product; ih/iw multiply ic when given)
// '_' may separate fields (m75n1024k32ta_n"name").
#pragma once
#include <string>

#include "kernels/conv_reference.h"
#include "kernels/gemm.h"
#include "kernels/lrn.h"
#include "kernels/pooling.h"

namespace rudra::kernels {

struct GemmShape {
    int m = 0, n = 0, k = 0;
    Trans ta = Trans::No, tb = Trans::No;
};

enum class ProblemKind { Conv, Gemm, PoolMax, PoolAve, LrnAcross, LrnWithin, InnerProduct };

struct Problem {
    std::string text;  // as written (with the mini-batch substituted when swept)
    std::string name;  // n"..." or empty
    ProblemKind kind = ProblemKind::Conv;
    bool is_gemm = false;
    GemmShape gemm;
    ConvProblem conv;
    int mb = 0, channels = 0;    // pooling, LRN, inner product (channels: ic)
    PoolGeometry pool;  // one plane
    LrnGeometry lrn;
    int ip_outputs = 0;
    // Pooling and LRN are limited by memory, not arithmetic: they report bytes per second.
    bool memory_bound() const;
    double flops() const;  // one forward pass (a conv's or ip's backward passes cost the same)
    double bytes() const;  // what one forward pass must read and write at least (pooling, LRN)
    int minibatch() const;  // 0 for GEMM
};

// `text` as an error message quotes it: bytes outside printable ASCII as \xHH (a NUL would end
// the message where it stands).
std::string printable(const std::string& text);

// Throws std::invalid_argument saying what is wrong with `text`.
Problem parse_problem(const std::string& text);
// The same convolution or layer at another mini-batch.
Problem with_minibatch(const Problem& p, int mb);

}  // namespace rudra::kernels
