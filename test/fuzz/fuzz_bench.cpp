// rudra bench's problem descriptors (benchdnn's "mb128ic3ih32oc32oh32kh5ph2", GEMMs, pooling,
// LRN, inner products). A descriptor is refused with a message that quotes it, or it describes
// a problem the kernels can run (geometry within their int sizes) whose mini-batch can be
// changed (to 1) and read back.
#include <cmath>
#include <stdexcept>

#include "kernels/conv_geometry.h"
#include "kernels/pooling.h"
#include "kernels/problems.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    const std::string text(reinterpret_cast<const char*>(data), size);
    kernels::Problem p;
    try {
        p = kernels::parse_problem(text);
    } catch (const std::invalid_argument& e) {
        fuzz::require(std::string(e.what()).rfind("problem '" + kernels::printable(text) + "': ", 0) == 0,
                      "the refusal quotes the descriptor");
        return 0;
    }
    fuzz::require(std::isfinite(p.flops()) && p.flops() >= 0 && std::isfinite(p.bytes()) && p.bytes() >= 0,
                  "flops and bytes are finite");
    if (!p.is_gemm && p.kind == kernels::ProblemKind::Conv)
        fuzz::require(kernels::geometry_problem(p.conv.geom).empty(), "an accepted convolution's geometry runs");
    if (p.kind == kernels::ProblemKind::PoolMax || p.kind == kernels::ProblemKind::PoolAve)
        fuzz::require(kernels::geometry_problem(p.pool).empty() && p.pool.pooled_h() >= 1 && p.pool.pooled_w() >= 1,
                      "an accepted pooling's geometry runs");
    // Mini-batch 1: never past a limit the descriptor's own mini-batch was within.
    const kernels::Problem q = kernels::with_minibatch(p, 1);
    try {
        const kernels::Problem back = kernels::parse_problem(q.text);
        fuzz::require(p.is_gemm || back.minibatch() == 1, "the mini-batch reads back");
    } catch (const std::invalid_argument&) {
        fuzz::require(false, "a descriptor with its mini-batch changed reads back");
    }
    return 0;
}
