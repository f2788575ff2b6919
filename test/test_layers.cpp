// Layers: finite-difference gradient checks over several shapes, the GEMM convolution against the
// direct reference, pooling sizes against Caffe's rule, and forward values of the simple layers.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "kernels/conv_reference.h"
#include "kernels/lrn.h"
#include "kernels/pooling.h"
#include "kernels/relu.h"
#include "isa_gates.h"
#include "layer_harness.h"

using rudra::nn::Phase;
using rudra::nn::Shape;
using rudra::test::LayerHarness;

namespace {

struct ConvCase {
    int n, c, h, w, o, kh, kw, s, p, g, d;
};

std::string conv_block(const ConvCase& k) {
    return "name: 'conv' type: 'Convolution' bottom: 'x' top: 'y' convolution_param { num_output: " +
           std::to_string(k.o) + " kernel_h: " + std::to_string(k.kh) + " kernel_w: " + std::to_string(k.kw) +
           " stride: " + std::to_string(k.s) + " pad: " + std::to_string(k.p) + " group: " + std::to_string(k.g) +
           " dilation: " + std::to_string(k.d) + " }";
}

rudra::kernels::ConvProblem problem(const ConvCase& k) {
    rudra::kernels::ConvProblem p;
    p.num = k.n;
    p.geom = {k.c, k.h, k.w, k.kh, k.kw, k.p, k.p, k.s, k.s, k.d, k.d};
    p.out_channels = k.o;
    p.groups = k.g;
    return p;
}

void require_close(const float* a, const std::vector<float>& b, float tol) {
    for (size_t i = 0; i < b.size(); ++i) {
        INFO("index " << i << ": " << a[i] << " vs " << b[i]);
        REQUIRE(std::fabs(a[i] - b[i]) <= tol * std::max(1.0f, std::fabs(b[i])));
    }
}

const ConvCase kConvCases[] = {
    {2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1},    {1, 4, 7, 9, 6, 3, 3, 2, 0, 2, 1},    {3, 2, 5, 5, 4, 1, 1, 1, 0, 1, 1},
    {2, 6, 11, 10, 6, 5, 5, 2, 2, 3, 1},  {1, 3, 9, 9, 2, 3, 3, 1, 2, 1, 2},    {2, 2, 6, 8, 3, 2, 3, 1, 1, 1, 1},
    {4, 3, 32, 32, 32, 5, 5, 1, 2, 1, 1}, {1, 1, 1, 1, 3, 1, 1, 1, 0, 1, 1},    {3, 4, 6, 6, 8, 1, 1, 2, 0, 4, 1},
    {5, 32, 7, 7, 64, 5, 5, 1, 2, 1, 1},
};

}  // namespace

TEST_CASE("convolution layer on every backend matches the direct reference, forward and both backward passes") {
    std::mt19937 rng(3);
    for (const char* backend : {"own", "blis", "onednn"})
    for (const ConvCase& k : kConvCases) {
        if (!rudra::kernels::conv_backend_available(*rudra::kernels::conv_backend_from_name(backend))) continue;
        CAPTURE(backend);
        CAPTURE(conv_block(k));
        rudra::nn::KernelOptions kernels;
        kernels.conv = backend;
        kernels.auto_cache = "";
        LayerHarness h(conv_block(k), {Shape{k.n, k.c, k.h, k.w}}, rudra::nn::Phase::Train, kernels);
        CHECK(h.layer().backend().rfind(std::string(backend) + ": ", 0) == 0);
        h.randomize(rng);
        h.forward();
        auto p = problem(k);
        std::vector<float> ref(h.top(0).count());
        rudra::kernels::conv_forward_reference(p, h.bottom(0).data, h.param(0).data(), h.param(1).data(), ref.data());
        require_close(h.top(0).data, ref, 1e-4f);

        std::uniform_real_distribution<float> u(-1, 1);
        for (int64_t i = 0; i < h.top(0).count(); ++i) h.top(0).diff[i] = u(rng);
        h.backward({true});
        std::vector<float> dx(h.bottom(0).count()), dw(h.param(0).size(), 0.0f), db(h.param(1).size(), 0.0f);
        rudra::kernels::conv_backward_data_reference(p, h.top(0).diff, h.param(0).data(), dx.data());
        rudra::kernels::conv_backward_weights_reference(p, h.bottom(0).data, h.top(0).diff, dw.data(), db.data());
        require_close(h.bottom(0).diff, dx, 1e-4f);
        require_close(h.param_diff(0).data(), dw, 1e-4f);
        require_close(h.param_diff(1).data(), db, 1e-4f);
    }
}

TEST_CASE("convolution: weight gradients accumulate across backward calls") {
    std::mt19937 rng(4);
    LayerHarness h(conv_block({2, 3, 6, 6, 4, 3, 3, 1, 1, 1, 1}), {Shape{2, 3, 6, 6}});
    h.randomize(rng);
    h.forward();
    for (int64_t i = 0; i < h.top(0).count(); ++i) h.top(0).diff[i] = 1.0f;
    h.backward({false});
    std::vector<float> once = h.param_diff(0);
    h.backward({false});
    for (size_t i = 0; i < once.size(); ++i) CHECK(h.param_diff(0)[i] == doctest::Approx(2 * once[i]).epsilon(1e-5));
}

TEST_CASE("convolution: finite-difference gradients") {
    std::mt19937 rng(5);
    for (const ConvCase& k : {ConvCase{2, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1}, ConvCase{1, 4, 7, 6, 4, 3, 3, 2, 1, 2, 1},
                              ConvCase{2, 2, 4, 4, 3, 1, 1, 1, 0, 1, 1}, ConvCase{1, 2, 7, 7, 2, 3, 2, 2, 2, 1, 1}}) {
        CAPTURE(conv_block(k));
        LayerHarness h(conv_block(k), {Shape{k.n, k.c, k.h, k.w}});
        h.randomize(rng);
        h.check_gradients({true}, rng);
    }
}

TEST_CASE("pooling: output size follows Caffe's rounding-up rule") {
    // Caffe: ceil((in + 2p - k) / s) + 1, minus one when the last window starts in the padding.
    for (int in = 1; in <= 40; ++in)
        for (int k = 1; k <= 5; ++k)
            for (int s = 1; s <= 3; ++s)
                for (int p = 0; p < k && p <= 2; ++p) {
                    if (in + 2 * p < k) continue;
                    int expect = static_cast<int>(std::ceil(static_cast<float>(in + 2 * p - k) / s)) + 1;
                    if (p > 0 && (expect - 1) * s >= in + p) --expect;
                    CHECK(rudra::kernels::caffe_pooled_size(in, k, p, s) == expect);
                }
    // The cifar10_full chain: 32 -> 16 -> 8 -> 4, and 28 -> 14 -> 7 -> 3.
    CHECK(rudra::kernels::caffe_pooled_size(32, 3, 0, 2) == 16);
    CHECK(rudra::kernels::caffe_pooled_size(16, 3, 0, 2) == 8);
    CHECK(rudra::kernels::caffe_pooled_size(8, 3, 0, 2) == 4);
    CHECK(rudra::kernels::caffe_pooled_size(28, 3, 0, 2) == 14);
    CHECK(rudra::kernels::caffe_pooled_size(14, 3, 0, 2) == 7);
    CHECK(rudra::kernels::caffe_pooled_size(7, 3, 0, 2) == 3);
    LayerHarness h("name: 'p' type: 'Pooling' bottom: 'x' top: 'y' pooling_param { pool: AVE kernel_size: 3 stride: 2 }",
                   {Shape{2, 3, 32, 32}});
    CHECK(h.top(0).shape == Shape{2, 3, 16, 16});
}

TEST_CASE("pooling: values at clipped borders") {
    // 3x3 input 1..9, kernel 2 stride 2: windows {1,2,4,5} {3,6} {7,8} {9}.
    LayerHarness mx("name: 'p' type: 'Pooling' bottom: 'x' top: 'y' pooling_param { pool: MAX kernel_size: 2 stride: 2 }",
                    {Shape{1, 1, 3, 3}});
    LayerHarness av("name: 'p' type: 'Pooling' bottom: 'x' top: 'y' pooling_param { pool: AVE kernel_size: 2 stride: 2 }",
                    {Shape{1, 1, 3, 3}});
    for (int i = 0; i < 9; ++i) mx.bottom(0).data[i] = av.bottom(0).data[i] = static_cast<float>(i + 1);
    mx.forward();
    av.forward();
    const float want_max[] = {5, 6, 8, 9};
    // Caffe divides by the window clipped to the image plus padding (here no padding): 4, 2, 2, 1.
    const float want_avg[] = {3, 4.5f, 7.5f, 9};
    for (int i = 0; i < 4; ++i) {
        CHECK(mx.top(0).data[i] == want_max[i]);
        CHECK(av.top(0).data[i] == doctest::Approx(want_avg[i]));
    }
}

// A square pooling window: input h x w, kernel k, stride s, pad p.
struct SquarePool {
    int h, w, k, s, p;
    rudra::kernels::PoolGeometry geometry() const {
        rudra::kernels::PoolGeometry g;
        g.height = h;
        g.width = w;
        g.kernel_h = g.kernel_w = k;
        g.stride_h = g.stride_w = s;
        g.pad_h = g.pad_w = p;
        return g;
    }
};

TEST_CASE("max pooling: values and argmax match a direct scan over clipped windows, ties to the first") {
    std::mt19937 rng(21);
    std::uniform_int_distribution<int> level(0, 6);  // few distinct values: many ties
    for (SquarePool c : {SquarePool{32, 32, 3, 2, 0}, SquarePool{9, 13, 3, 2, 1}, SquarePool{8, 8, 2, 2, 0},
                         SquarePool{7, 11, 3, 1, 1}, SquarePool{10, 9, 3, 3, 1}, SquarePool{6, 17, 5, 2, 2},
                         SquarePool{5, 37, 3, 2, 1},  // 37 wide: the masked whole-window taps
                         // Rows wide enough for steps whose taps all lie inside (avx512_rows' and
                         // avx2_rows' interior steps), full and partial: AlexNet's pool1 among them.
                         SquarePool{55, 55, 3, 2, 0}, SquarePool{9, 45, 3, 1, 1}, SquarePool{6, 47, 2, 1, 0},
                         SquarePool{12, 70, 3, 2, 1}}) {
        const rudra::kernels::PoolGeometry g = c.geometry();
        const int planes = 3, ph = g.pooled_h(), pw = g.pooled_w();
        std::vector<float> x(static_cast<size_t>(planes) * c.h * c.w);
        for (float& v : x) v = static_cast<float>(level(rng));
        std::vector<float> y(static_cast<size_t>(planes) * ph * pw);
        std::vector<int32_t> arg(y.size());
        for (const rudra::kernels::IsaGate& gate : allowed_gates()) {
        const rudra::kernels::PoolKernel kernel(rudra::kernels::PoolMethod::Max, g, gate);
        kernel.forward(x.data(), planes, y.data(), arg.data());
        size_t wrong = 0;
        for (int p = 0; p < planes; ++p)
            for (int py = 0; py < ph; ++py)
                for (int px = 0; px < pw; ++px) {
                    float best = 0.0f;
                    int32_t where = -1;
                    for (int h = py * c.s - c.p; h < py * c.s - c.p + c.k; ++h)
                        for (int w = px * c.s - c.p; w < px * c.s - c.p + c.k; ++w) {
                            if (h < 0 || h >= c.h || w < 0 || w >= c.w) continue;
                            const float v = x[(static_cast<size_t>(p) * c.h + h) * c.w + w];
                            if (where < 0 || v > best) best = v, where = h * c.w + w;
                        }
                    const size_t o = (static_cast<size_t>(p) * ph + py) * pw + px;
                    wrong += y[o] != (where < 0 ? 0.0f : best) || arg[o] != where;
                }
        CAPTURE(c.h);
        CAPTURE(c.w);
        CAPTURE(c.k);
        CAPTURE(c.s);
        CAPTURE(kernel.describe());
        CHECK(wrong == 0);
        }
    }
}

// Rows of up to 32 columns take the register path (kernels/pool_narrow.cpp), wider ones and
// stride 3 the general one.
const SquarePool kAveragePools[] = {{16, 16, 3, 2, 0}, {9, 13, 3, 2, 1}, {8, 8, 3, 2, 0},  {7, 11, 3, 1, 1},
                                    {10, 9, 3, 3, 1},  {6, 37, 5, 2, 2}, {12, 27, 3, 2, 1}, {5, 20, 4, 2, 2}};

TEST_CASE("average pooling: values match a direct sum over clipped windows (Caffe's divisor)") {
    std::mt19937 rng(22);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (SquarePool c : kAveragePools) {
        const rudra::kernels::PoolGeometry g = c.geometry();
        const int planes = 3, ph = g.pooled_h(), pw = g.pooled_w();
        std::vector<float> x(static_cast<size_t>(planes) * c.h * c.w);
        for (float& v : x) v = u(rng);
        std::vector<float> y(static_cast<size_t>(planes) * ph * pw);
        for (const rudra::kernels::IsaGate& gate : allowed_gates()) {
        const rudra::kernels::PoolKernel kernel(rudra::kernels::PoolMethod::Average, g, gate);
        kernel.forward(x.data(), planes, y.data(), nullptr);
        double worst = 0.0;
        for (int p = 0; p < planes; ++p)
            for (int py = 0; py < ph; ++py)
                for (int px = 0; px < pw; ++px) {
                    const int h0 = py * c.s - c.p, w0 = px * c.s - c.p;
                    const int h1 = std::min(h0 + c.k, c.h + c.p), w1 = std::min(w0 + c.k, c.w + c.p);
                    double sum = 0.0;
                    for (int h = std::max(h0, 0); h < std::min(h1, c.h); ++h)
                        for (int w = std::max(w0, 0); w < std::min(w1, c.w); ++w) sum += x[(static_cast<size_t>(p) * c.h + h) * c.w + w];
                    const double want = sum / ((h1 - h0) * (w1 - w0));
                    worst = std::max(worst, std::fabs(want - y[(static_cast<size_t>(p) * ph + py) * pw + px]));
                }
        CAPTURE(c.h);
        CAPTURE(c.w);
        CAPTURE(kernel.describe());
        CHECK(worst < 1e-5);
        }
    }
}

TEST_CASE("average pooling backward: matches a direct scatter of dy / divisor over clipped windows") {
    std::mt19937 rng(23);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (SquarePool c : kAveragePools) {
        const rudra::kernels::PoolGeometry g = c.geometry();
        const int planes = 3, ph = g.pooled_h(), pw = g.pooled_w();
        std::vector<float> dy(static_cast<size_t>(planes) * ph * pw);
        for (float& v : dy) v = u(rng);
        std::vector<double> want(static_cast<size_t>(planes) * c.h * c.w, 0.0);
        for (int p = 0; p < planes; ++p)
            for (int py = 0; py < ph; ++py)
                for (int px = 0; px < pw; ++px) {
                    const int h0 = py * c.s - c.p, w0 = px * c.s - c.p;
                    const int h1 = std::min(h0 + c.k, c.h + c.p), w1 = std::min(w0 + c.k, c.w + c.p);
                    const double share = dy[(static_cast<size_t>(p) * ph + py) * pw + px] / ((h1 - h0) * (w1 - w0));
                    for (int h = std::max(h0, 0); h < std::min(h1, c.h); ++h)
                        for (int w = std::max(w0, 0); w < std::min(w1, c.w); ++w)
                            want[(static_cast<size_t>(p) * c.h + h) * c.w + w] += share;
                }
        for (const rudra::kernels::IsaGate& gate : allowed_gates()) {
            const rudra::kernels::PoolKernel kernel(rudra::kernels::PoolMethod::Average, g, gate);
            std::vector<float> dx(want.size(), 7.0f);  // must be overwritten
            kernel.backward(dy.data(), nullptr, planes, dx.data());
            double worst = 0.0;
            for (size_t i = 0; i < dx.size(); ++i) worst = std::max(worst, std::fabs(want[i] - dx[i]));
            CAPTURE(c.h);
            CAPTURE(c.w);
            CAPTURE(kernel.describe());
            CHECK(worst < 1e-5);
        }
    }
}

TEST_CASE("pooling: finite-difference gradients (max and average, stride, pad, odd sizes)") {
    std::mt19937 rng(6);
    const char* blocks[] = {
        "pool: MAX kernel_size: 3 stride: 2", "pool: AVE kernel_size: 3 stride: 2",
        "pool: MAX kernel_size: 3 stride: 2 pad: 1", "pool: AVE kernel_size: 3 stride: 1 pad: 1",
        "pool: AVE kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2", "pool: MAX global_pooling: true",
    };
    for (const char* b : blocks)
        for (Shape s : {Shape{2, 3, 7, 7}, Shape{1, 2, 6, 9}}) {
            CAPTURE(b);
            LayerHarness h(std::string("name: 'p' type: 'Pooling' bottom: 'x' top: 'y' pooling_param { ") + b + " }", {s});
            // Distinct values spaced wider than the probe step, so no probe changes a maximum.
            std::vector<float> v(s.count());
            std::iota(v.begin(), v.end(), 0.0f);
            std::shuffle(v.begin(), v.end(), rng);
            for (int64_t i = 0; i < s.count(); ++i) h.bottom(0).data[i] = v[i] * 0.05f;  // spacing > 2 eps
            h.check_gradients({true}, rng);
        }
}

TEST_CASE("relu and leaky relu: values and gradients") {
    std::mt19937 rng(7);
    for (const char* p : {"", "relu_param { negative_slope: 0.1 }"}) {
        LayerHarness h(std::string("name: 'r' type: 'ReLU' bottom: 'x' top: 'y' ") + p, {Shape{2, 3, 4, 5}});
        h.randomize(rng);
        for (int64_t i = 0; i < h.bottom(0).count(); ++i) {  // keep away from the kink
            float& x = h.bottom(0).data[i];
            x = x >= 0 ? x + 0.05f : x - 0.05f;
        }
        h.forward();
        const float slope = *p ? 0.1f : 0.0f;
        for (int64_t i = 0; i < h.bottom(0).count(); ++i) {
            const float x = h.bottom(0).data[i];
            CHECK(h.top(0).data[i] == (x > 0 ? x : slope * x));
        }
        h.check_gradients({true}, rng);
    }
}

TEST_CASE("relu kernel: every implementation the gate allows, over lengths that split unevenly across threads") {
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (long n : {1L, 15L, 17L, 1000L, 4099L})
        for (float slope : {0.0f, 0.1f}) {
            std::vector<float> x(static_cast<size_t>(n)), dy(x.size());
            for (float& v : x) v = u(rng);
            for (float& v : dy) v = u(rng);
            for (const rudra::kernels::IsaGate& gate : allowed_gates()) {
                const rudra::kernels::ReluKernel k(slope, gate);
                std::vector<float> y(x.size(), 7.0f), dx(x.size(), 7.0f);
                k.forward(x.data(), y.data(), n);
                k.backward(x.data(), dy.data(), dx.data(), n);
                size_t wrong = 0;
                for (size_t i = 0; i < x.size(); ++i)
                    wrong += y[i] != (x[i] > 0 ? x[i] : slope * x[i]) || dx[i] != (x[i] > 0 ? dy[i] : slope * dy[i]);
                CAPTURE(n);
                CAPTURE(k.describe());
                CHECK(wrong == 0);
            }
        }
}

TEST_CASE("lrn: finite-difference gradients across and within channels") {
    std::mt19937 rng(8);
    const char* blocks[] = {
        "local_size: 3 alpha: 3.0 beta: 0.75 norm_region: WITHIN_CHANNEL",
        "local_size: 5 alpha: 2.0 beta: 0.75",
        "local_size: 3 alpha: 1.0 beta: 0.6 k: 2 norm_region: ACROSS_CHANNELS",
        "local_size: 5 alpha: 5e-05 beta: 0.75 norm_region: WITHIN_CHANNEL",
        "local_size: 3 alpha: 2.0 beta: 0.6 norm_region: WITHIN_CHANNEL",
    };
    for (const char* b : blocks)
        for (Shape s : {Shape{2, 7, 5, 5}, Shape{1, 3, 4, 7}, Shape{1, 2, 3, 18}}) {
            CAPTURE(b);
            LayerHarness h(std::string("name: 'n' type: 'LRN' bottom: 'x' top: 'y' lrn_param { ") + b + " }", {s});
            h.randomize(rng);
            h.check_gradients({true}, rng);
        }
}

TEST_CASE("lrn: within-channel value matches Caffe's definition") {
    // One 1x1x3x3 plane of ones, size 3, alpha 9, beta 1: the centre sees 9 squares, a corner 4.
    LayerHarness h("name: 'n' type: 'LRN' bottom: 'x' top: 'y' lrn_param { local_size: 3 alpha: 9 beta: 1 norm_region: WITHIN_CHANNEL }",
                   {Shape{1, 1, 3, 3}});
    for (int i = 0; i < 9; ++i) h.bottom(0).data[i] = 1.0f;
    h.forward();
    CHECK(h.top(0).data[4] == doctest::Approx(1.0 / (1.0 + 9.0 / 9.0 * 9.0)));
    CHECK(h.top(0).data[0] == doctest::Approx(1.0 / (1.0 + 9.0 / 9.0 * 4.0)));
}

// LRN's two passes on every gate this machine allows, against the definition computed in double.
static void check_lrn_on_every_gate(const rudra::kernels::LrnGeometry& g, int num, const std::vector<float>& x,
                                    const std::vector<float>& dy, const std::vector<double>& y_want,
                                    const std::vector<double>& dx_want, double tolerance) {
    const size_t count = x.size();
    for (const rudra::kernels::IsaGate& gate : allowed_gates()) {
        const rudra::kernels::LrnKernel kernel(g, num, gate);
        std::vector<float> y(count), dx(count, 7.0f), scratch(kernel.scratch_floats());
        kernel.forward(x.data(), y.data(), scratch.data());
        kernel.backward(x.data(), y.data(), dy.data(), dx.data(), scratch.data());
        double worst_y = 0.0, worst_dx = 0.0;
        for (size_t i = 0; i < count; ++i) {
            worst_y = std::max(worst_y, std::fabs(y_want[i] - y[i]));
            worst_dx = std::max(worst_dx, std::fabs(dx_want[i] - dx[i]));
        }
        CAPTURE(kernel.describe());
        CHECK(worst_y < tolerance);
        CHECK(worst_dx < tolerance);
    }
}

TEST_CASE("lrn within a channel: forward and backward match Caffe's definition over clipped windows") {
    std::mt19937 rng(24);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    struct Case {
        int channels, h, w, size;
        float beta;
    };
    // Rows of up to 16 with beta 0.75 take avx512_narrow (kernels/lrn_narrow.cpp) where the gate
    // allows it, the others the portable path.
    for (Case c : {Case{3, 16, 16, 3, 0.75f}, Case{2, 8, 8, 5, 0.75f}, Case{2, 5, 7, 3, 0.75f}, Case{1, 1, 9, 3, 0.75f},
                   Case{2, 11, 4, 7, 0.75f}, Case{2, 6, 20, 3, 0.75f}, Case{2, 9, 9, 5, 0.6f}}) {
        rudra::kernels::LrnGeometry g;
        g.channels = c.channels;
        g.height = c.h;
        g.width = c.w;
        g.local_size = c.size;
        g.alpha = 0.5f;
        g.beta = c.beta;
        g.across_channels = false;
        const int num = 2;
        const size_t count = static_cast<size_t>(num) * c.channels * c.h * c.w;
        std::vector<float> x(count), dy(count);
        for (float& v : x) v = u(rng);
        for (float& v : dy) v = u(rng);
        // Caffe's definition in double: s = 1 + alpha/size^2 * box sum of x^2, y = x s^-beta,
        // dx = dy s^-beta - 2 alpha beta / size^2 * x * box sum of (dy y / s).
        const int half = (c.size - 1) / 2;
        const double a = 0.5 / (c.size * c.size);
        auto box = [&](size_t plane, int h, int w, auto&& value) {
            double sum = 0.0;
            for (int hh = std::max(0, h - half); hh <= std::min(c.h - 1, h + half); ++hh)
                for (int ww = std::max(0, w - half); ww <= std::min(c.w - 1, w + half); ++ww)
                    sum += value((plane * c.h + hh) * c.w + ww);
            return sum;
        };
        std::vector<double> s(count), y_want(count), dx_want(count);
        for (size_t plane = 0; plane < static_cast<size_t>(num) * c.channels; ++plane)
            for (int h = 0; h < c.h; ++h)
                for (int w = 0; w < c.w; ++w) {
                    const size_t i = (plane * c.h + h) * c.w + w;
                    s[i] = 1.0 + a * box(plane, h, w, [&](size_t j) { return double(x[j]) * x[j]; });
                    y_want[i] = x[i] * std::pow(s[i], -c.beta);
                }
        for (size_t plane = 0; plane < static_cast<size_t>(num) * c.channels; ++plane)
            for (int h = 0; h < c.h; ++h)
                for (int w = 0; w < c.w; ++w) {
                    const size_t i = (plane * c.h + h) * c.w + w;
                    const double ratio = box(plane, h, w, [&](size_t j) { return dy[j] * y_want[j] / s[j]; });
                    dx_want[i] = dy[i] * std::pow(s[i], -c.beta) - 2.0 * a * c.beta * x[i] * ratio;
                }
        CAPTURE(c.h);
        CAPTURE(c.w);
        CAPTURE(c.size);
        check_lrn_on_every_gate(g, num, x, dy, y_want, dx_want, 1e-5);
    }
}

TEST_CASE("lrn across channels: forward and backward match Caffe's definition, planes of several chunks") {
    std::mt19937 rng(25);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    struct Case {
        int channels, h, w, size;
        float beta, k;
    };
    // Planes above 512 positions take several chunks; fewer channels than the window clip it
    // on both sides; k 0 leaves the scale to the sum alone.
    for (Case c : {Case{8, 23, 29, 5, 0.75f, 1.0f}, Case{2, 5, 7, 5, 0.75f, 1.0f}, Case{1, 3, 3, 3, 0.75f, 2.0f},
                   Case{7, 40, 13, 3, 0.6f, 1.0f}, Case{12, 9, 9, 7, 0.75f, 0.5f}, Case{5, 33, 33, 1, 0.75f, 1.0f}}) {
        rudra::kernels::LrnGeometry g;
        g.channels = c.channels;
        g.height = c.h;
        g.width = c.w;
        g.local_size = c.size;
        g.alpha = 0.7f;
        g.beta = c.beta;
        g.k = c.k;
        g.across_channels = true;
        const int num = 3;
        const size_t plane = static_cast<size_t>(c.h) * c.w, count = num * c.channels * plane;
        std::vector<float> x(count), dy(count);
        for (float& v : x) v = u(rng);
        for (float& v : dy) v = u(rng);
        // In double: s = k + alpha/size * sum of x^2 over channels [c - before, c + after],
        // y = x s^-beta, dx = dy s^-beta - 2 alpha beta / size * x * the same sum of (dy y / s).
        const int before = (c.size - 1) / 2, after = c.size - 1 - before;
        const double a = 0.7 / c.size;
        auto window = [&](size_t n, int ch, size_t p, auto&& value) {
            double sum = 0.0;
            for (int cc = std::max(0, ch - before); cc <= std::min(c.channels - 1, ch + after); ++cc)
                sum += value((n * c.channels + cc) * plane + p);
            return sum;
        };
        std::vector<double> s(count), y_want(count), dx_want(count);
        for (int pass = 0; pass < 2; ++pass)
            for (size_t n = 0; n < static_cast<size_t>(num); ++n)
                for (int ch = 0; ch < c.channels; ++ch)
                    for (size_t p = 0; p < plane; ++p) {
                        const size_t i = (n * c.channels + ch) * plane + p;
                        if (pass == 0) {
                            s[i] = c.k + a * window(n, ch, p, [&](size_t j) { return double(x[j]) * x[j]; });
                            y_want[i] = x[i] * std::pow(s[i], -c.beta);
                        } else {
                            const double r = window(n, ch, p, [&](size_t j) { return dy[j] * y_want[j] / s[j]; });
                            dx_want[i] = dy[i] * std::pow(s[i], -c.beta) - 2.0 * a * c.beta * x[i] * r;
                        }
                    }
        CAPTURE(c.channels);
        CAPTURE(c.h);
        CAPTURE(c.w);
        CAPTURE(c.size);
        check_lrn_on_every_gate(g, num, x, dy, y_want, dx_want, 2e-5);
    }
}

TEST_CASE("inner product on every GEMM backend: finite-difference gradients") {
    std::mt19937 rng(9);
    for (const char* backend : {"own", "blis", "onednn", "reference"})
        for (Shape s : {Shape{3, 4, 2, 2}, Shape{1, 7}, Shape{5, 3, 1, 1}}) {
            rudra::nn::KernelOptions kernels;
            kernels.conv = backend;
            if (std::string(backend) == "blis" && !rudra::kernels::gemm_backend_available(rudra::kernels::GemmBackend::Blis)) continue;
            if (std::string(backend) == "onednn" && !rudra::kernels::gemm_backend_available(rudra::kernels::GemmBackend::Onednn)) continue;
            CAPTURE(backend);
            LayerHarness h("name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y' inner_product_param { num_output: 5 }", {s},
                           rudra::nn::Phase::Train, kernels);
            CHECK(h.layer().backend().rfind(backend, 0) == 0);  // "own (avx512)", "blis", ...
            h.randomize(rng);
            h.check_gradients({true}, rng);
        }
}

TEST_CASE("inner product: a second backend for backward-data, and auto's choice") {
    std::mt19937 rng(19);
    const Shape s{3, 4, 2, 2};
    const char* ip = "name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y' inner_product_param { num_output: 5 }";
    SUBCASE("named: own for forward and backward-weights, reference for backward-data") {
        rudra::nn::KernelOptions kernels;
        kernels.conv = "reference,ip=own+reference";
        LayerHarness h(ip, {s}, rudra::nn::Phase::Train, kernels);
        CHECK(h.layer().backend().rfind("own (", 0) == 0);
        CHECK(h.layer().backend().find(")+reference") != std::string::npos);
        h.randomize(rng);
        h.check_gradients({true}, rng);
    }
    SUBCASE("auto: the session's answer, asked with the layer's shape") {
        rudra::nn::KernelOptions kernels;
        kernels.conv = "auto";
        int asked_num = 0, asked_in = 0, asked_out = 0;
        kernels.choose_auto_inner_product = [&](const std::string& layer, int num, int in, int out, int threads) {
            CHECK(layer == "ip");
            CHECK(threads >= 1);
            asked_num = num, asked_in = in, asked_out = out;
            return rudra::kernels::AutoChoice{rudra::kernels::ConvBackend::Reference, rudra::kernels::ConvBackend::Own,
                                              "chosen by the test"};
        };
        LayerHarness h(ip, {s}, rudra::nn::Phase::Train, kernels);
        CHECK(asked_num == 3);
        CHECK(asked_in == 16);
        CHECK(asked_out == 5);
        CHECK(h.layer().backend().rfind("reference+own (", 0) == 0);
        CHECK(h.layer().backend().find("(auto: chosen by the test)") != std::string::npos);
        h.randomize(rng);
        h.check_gradients({true}, rng);
    }
    SUBCASE("auto with no session: measured here, on a backend of this build") {
        rudra::nn::KernelOptions kernels;
        kernels.conv = "auto";
        kernels.auto_cache = "";
        LayerHarness h(ip, {s}, rudra::nn::Phase::Train, kernels);
        CHECK(h.layer().backend().find("(auto: fwd+bwd_weights ") != std::string::npos);
        CHECK(h.layer().backend().find("ms: own ") != std::string::npos);
        h.randomize(rng);
        h.check_gradients({true}, rng);
    }
}

TEST_CASE("dropout: train scales survivors, test is the identity, gradients follow the mask") {
    std::mt19937 rng(10);
    LayerHarness tr("name: 'd' type: 'Dropout' bottom: 'x' top: 'y' dropout_param { dropout_ratio: 0.5 }", {Shape{4, 50}});
    tr.randomize(rng);
    tr.forward();
    int zeros = 0;
    for (int64_t i = 0; i < 200; ++i) {
        const float x = tr.bottom(0).data[i], y = tr.top(0).data[i];
        if (y == 0.0f) ++zeros;
        else CHECK(y == doctest::Approx(2 * x));
    }
    CHECK(zeros > 60);
    CHECK(zeros < 140);
    tr.check_gradients({true}, rng);
    LayerHarness te("name: 'd' type: 'Dropout' bottom: 'x' top: 'y'", {Shape{2, 5}}, Phase::Test);
    te.randomize(rng);
    te.forward();
    for (int i = 0; i < 10; ++i) CHECK(te.top(0).data[i] == te.bottom(0).data[i]);
}

TEST_CASE("dropout on a large blob: the ratio holds, masks follow the seed, not the thread count") {
    const int64_t n = 300000;  // above the size that splits the mask across the threads
    LayerHarness h("name: 'd' type: 'Dropout' bottom: 'x' top: 'y' dropout_param { dropout_ratio: 0.3 }", {Shape{3, n / 3}});
    std::fill(h.bottom(0).data, h.bottom(0).data + n, 1.0f);
    auto mask = [&](uint64_t seed, int threads) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        h.layer().seed(seed);
        h.layer().forward({&h.bottom(0)}, {&h.top(0)});
        omp_set_num_threads(before);
        return std::vector<float>(h.top(0).data, h.top(0).data + n);
    };
    const std::vector<float> a = mask(7, 1);
    int64_t dropped = 0, kept = 0;
    for (float v : a) {
        dropped += v == 0.0f;
        kept += v == doctest::Approx(1.0f / 0.7f);
    }
    CHECK(dropped + kept == n);
    CHECK(std::fabs(static_cast<double>(dropped) / n - 0.3) < 0.005);  // 0.3 within 6 standard deviations
    CHECK(mask(7, 2) == a);   // the same draws on 2 threads
    CHECK(mask(7, 1) == a);   // and again
    CHECK(mask(8, 2) != a);   // another seed, another mask
    // Two passes after one seed draw two masks, about as unlike as two independent ones.
    h.layer().seed(7);
    h.layer().forward({&h.bottom(0)}, {&h.top(0)});
    h.layer().forward({&h.bottom(0)}, {&h.top(0)});
    int64_t same_zero = 0;
    for (int64_t i = 0; i < n; ++i) same_zero += a[i] == 0.0f && h.top(0).data[i] == 0.0f;
    CHECK(std::fabs(static_cast<double>(same_zero) / n - 0.09) < 0.005);
}

TEST_CASE("dropout skip_passes: a layer that skips k passes draws the mask of pass k+1") {
    LayerHarness h("name: 'd' type: 'Dropout' bottom: 'x' top: 'y' dropout_param { dropout_ratio: 0.5 }", {Shape{2, 500}});
    std::fill(h.bottom(0).data, h.bottom(0).data + 1000, 1.0f);
    const auto pass = [&] {
        h.layer().forward({&h.bottom(0)}, {&h.top(0)});
        return std::vector<float>(h.top(0).data, h.top(0).data + 1000);
    };
    h.layer().seed(11);
    std::vector<std::vector<float>> masks;
    for (int k = 0; k < 4; ++k) masks.push_back(pass());
    for (uint64_t k = 0; k < 4; ++k) {
        h.layer().seed(11);
        h.layer().skip_passes(k);
        CHECK(pass() == masks[k]);
    }
    CHECK(masks[2] != masks[3]);
    // A TEST-phase dropout draws nothing, and skipping leaves it the identity.
    LayerHarness te("name: 'd' type: 'Dropout' bottom: 'x' top: 'y'", {Shape{2, 5}}, Phase::Test);
    te.layer().skip_passes(5);
    std::fill(te.bottom(0).data, te.bottom(0).data + 10, 3.0f);
    te.forward();
    for (int i = 0; i < 10; ++i) CHECK(te.top(0).data[i] == 3.0f);
}

TEST_CASE("softmax and softmax loss: gradients and values") {
    std::mt19937 rng(11);
    LayerHarness sm("name: 's' type: 'Softmax' bottom: 'x' top: 'y'", {Shape{3, 5}});
    sm.randomize(rng, -3, 3);
    sm.check_gradients({true}, rng);
    for (int n = 0; n < 3; ++n) {
        double sum = 0;
        for (int c = 0; c < 5; ++c) sum += sm.top(0).data[n * 5 + c];
        CHECK(sum == doctest::Approx(1.0));
    }
    for (Shape s : {Shape{4, 6}, Shape{2, 3, 2, 2}}) {
        LayerHarness h("name: 'l' type: 'SoftmaxWithLoss' bottom: 'x' bottom: 'label' top: 'loss'",
                       {s, s.rank() == 2 ? Shape{s[0]} : Shape{s[0], 1, s[2], s[3]}});
        h.randomize(rng, -2, 2);
        for (int64_t i = 0; i < h.bottom(1).count(); ++i) h.bottom(1).data[i] = static_cast<float>(rng() % s[1]);
        h.check_gradients({true, false}, rng);
    }
    // Uniform scores give loss log(C).
    LayerHarness u("name: 'l' type: 'SoftmaxWithLoss' bottom: 'x' bottom: 'label' top: 'loss'", {Shape{2, 10}, Shape{2}});
    u.forward();
    CHECK(u.top(0).data[0] == doctest::Approx(std::log(10.0)));
}

TEST_CASE("softmax loss: a label outside the classes is an error, not a crash") {
    LayerHarness h("name: 'l' type: 'SoftmaxWithLoss' bottom: 'x' bottom: 'label' top: 'loss'", {Shape{2, 3}, Shape{2}});
    h.bottom(1).data[1] = 7.0f;
    CHECK_THROWS_WITH_AS(h.forward(), doctest::Contains("label 7"), std::runtime_error);
}

TEST_CASE("accuracy: top-1 and top-k") {
    LayerHarness a1("name: 'a' type: 'Accuracy' bottom: 'x' bottom: 'label' top: 'acc'", {Shape{3, 4}, Shape{3}});
    LayerHarness a2("name: 'a' type: 'Accuracy' bottom: 'x' bottom: 'label' top: 'acc' accuracy_param { top_k: 2 }",
                    {Shape{3, 4}, Shape{3}});
    const float scores[] = {0.1f, 0.9f, 0.3f, 0.2f, /**/ 0.5f, 0.1f, 0.4f, 0.0f, /**/ 0.0f, 0.1f, 0.2f, 0.3f};
    const float labels[] = {1, 2, 0};
    for (auto* h : {&a1, &a2}) {
        std::copy(scores, scores + 12, h->bottom(0).data);
        std::copy(labels, labels + 3, h->bottom(1).data);
        h->forward();
    }
    CHECK(a1.top(0).data[0] == doctest::Approx(1.0 / 3));
    CHECK(a2.top(0).data[0] == doctest::Approx(2.0 / 3));
}
