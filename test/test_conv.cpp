// Every convolution backend against the direct reference over many descriptor strings:
// forward with and without bias, backward-data, backward-weights accumulating onto existing
// gradients; one thread and several.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv.h"
#include "tools/bench_problems.h"

using namespace rudra::kernels;

namespace {

std::vector<float> random_vector(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

// max |a - b| / (1 + max |b|)
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0, scale = 1.0;
    for (float v : b) scale = std::max(scale, 1.0 + std::abs(static_cast<double>(v)));
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - b[i]);
        if (!(d <= worst)) worst = std::isnan(d) ? 1e30 : d;
    }
    return worst / scale;
}

void check_backend(ConvBackend backend, const std::string& desc, int threads) {
    const ConvProblem p = rudra::tools::parse_problem(desc).conv;
    const ConvGeometry& g = p.geom;
    const size_t xs = static_cast<size_t>(p.num) * g.channels * g.height * g.width;
    const size_t ys = static_cast<size_t>(p.num) * p.out_channels * g.out_h() * g.out_w();
    const size_t ws = static_cast<size_t>(p.out_channels) * (g.channels / p.groups) * g.kernel_h * g.kernel_w;
    std::mt19937 rng(static_cast<uint32_t>(desc.size() * 7919 + threads));
    const auto x = random_vector(xs, rng), w = random_vector(ws, rng), bias = random_vector(p.out_channels, rng),
               dy = random_vector(ys, rng), dw0 = random_vector(ws, rng), db0 = random_vector(p.out_channels, rng);

    std::vector<float> y_ref(ys), y(ys, NAN), y_nb_ref(ys), y_nb(ys, NAN), dx_ref(xs), dx(xs, NAN);
    std::vector<float> dw_ref = dw0, dw = dw0, db_ref = db0, db = db0;
    conv_forward_reference(p, x.data(), w.data(), bias.data(), y_ref.data());
    conv_forward_reference(p, x.data(), w.data(), nullptr, y_nb_ref.data());
    conv_backward_data_reference(p, dy.data(), w.data(), dx_ref.data());
    conv_backward_weights_reference(p, x.data(), dy.data(), dw_ref.data(), db_ref.data());

    auto k = make_conv_kernel(p, backend, threads);
    k->forward(x.data(), w.data(), bias.data(), y.data());
    k->forward(x.data(), w.data(), nullptr, y_nb.data());
    k->backward_data(dy.data(), w.data(), dx.data());
    k->backward_weights(x.data(), dy.data(), dw.data(), db.data());

    CAPTURE(desc);
    CAPTURE(conv_backend_name(backend));
    CAPTURE(threads);
    CHECK(rel_diff(y, y_ref) < 1e-5);
    CHECK(rel_diff(y_nb, y_nb_ref) < 1e-5);
    CHECK(rel_diff(dx, dx_ref) < 1e-5);
    CHECK(rel_diff(dw, dw_ref) < 1e-5);
    CHECK(rel_diff(db, db_ref) < 1e-5);
}

const char* kDescriptors[] = {
    "mb2ic3ih32oc32oh32kh5ph2",          // cifar10_full conv1 shape
    "mb3ic32ih16oc32oh16kh5ph2",         // conv2
    "mb1ic32ih8oc64oh8kh5ph2",           // conv3, one image
    "mb5ic4ih9iw7oc6kh3kw2sh2sw1ph1pw0",  // rectangular everything, odd sizes
    "mb2ic6ih10oc4kh3g2",                // groups
    "mb2ic8ih12oc8kh3ph2dh1",            // dilation 2
    "mb3ic16ih7oc24kh1",                 // 1x1: no im2col
    "mb2ic16ih9oc8kh1sh2",               // 1x1 with stride: im2col
    "mb1ic3ih23oc5kh11sh4ph1",           // AlexNet-like large stride
};

}  // namespace

TEST_CASE("every convolution backend matches the direct reference") {
    for (ConvBackend be : {ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn}) {
        if (!conv_backend_available(be)) {
            MESSAGE("backend " << conv_backend_name(be) << " is not in this build");
            continue;
        }
        for (const char* desc : kDescriptors)
            for (int threads : {1, 2}) check_backend(be, desc, threads);
    }
}

TEST_CASE("backend names round-trip and unknown names are refused") {
    for (ConvBackend be : {ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn, ConvBackend::Reference})
        CHECK(conv_backend_from_name(conv_backend_name(be)) == be);
    CHECK(!conv_backend_from_name("cudnn"));
}
