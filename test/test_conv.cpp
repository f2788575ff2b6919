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
#include "kernels/conv_geometry.h"
#include "kernels/sgemm/sgemm.h"
#include "kernels/transpose.h"
#include "isa_gates.h"
#include "kernels/problems.h"

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

// One descriptor's inputs and the direct reference's results, computed once for every backend
// and thread count (the reference loops were 85% of this test's time, 6 times over).
struct ReferenceCase {
    std::string desc;
    ConvProblem p;
    std::vector<float> x, w, bias, dy, dw0, db0;
    std::vector<float> y_ref, y_nb_ref, dx_ref, dw_ref, db_ref;

    explicit ReferenceCase(const std::string& d) : desc(d), p(parse_problem(d).conv) {
        const ConvGeometry& g = p.geom;
        const size_t xs = static_cast<size_t>(p.num) * g.channels * g.height * g.width;
        const size_t ys = static_cast<size_t>(p.num) * p.out_channels * g.out_h() * g.out_w();
        const size_t ws = static_cast<size_t>(p.out_channels) * (g.channels / p.groups) * g.kernel_h * g.kernel_w;
        std::mt19937 rng(static_cast<uint32_t>(desc.size() * 7919));
        x = random_vector(xs, rng), w = random_vector(ws, rng), bias = random_vector(p.out_channels, rng);
        dy = random_vector(ys, rng), dw0 = random_vector(ws, rng), db0 = random_vector(p.out_channels, rng);
        y_ref.resize(ys), y_nb_ref.resize(ys), dx_ref.resize(xs), dw_ref = dw0, db_ref = db0;
        conv_forward_reference(p, x.data(), w.data(), bias.data(), y_ref.data());
        conv_forward_reference(p, x.data(), w.data(), nullptr, y_nb_ref.data());
        conv_backward_data_reference(p, dy.data(), w.data(), dx_ref.data());
        conv_backward_weights_reference(p, x.data(), dy.data(), dw_ref.data(), db_ref.data());
    }
};

void check_backend(ConvBackend backend, const ReferenceCase& c, int threads) {
    std::vector<float> y(c.y_ref.size(), NAN), y_nb(c.y_ref.size(), NAN), dx(c.dx_ref.size(), NAN);
    std::vector<float> dw = c.dw0, db = c.db0;
    auto k = make_conv_kernel(c.p, backend, threads);
    k->forward(c.x.data(), c.w.data(), c.bias.data(), y.data());
    k->forward(c.x.data(), c.w.data(), nullptr, y_nb.data());
    k->backward_data(c.dy.data(), c.w.data(), dx.data());
    k->backward_weights(c.x.data(), c.dy.data(), dw.data(), db.data());

    CAPTURE(c.desc);
    CAPTURE(conv_backend_name(backend));
    CAPTURE(threads);
    CHECK(rel_diff(y, c.y_ref) < 1e-5);
    CHECK(rel_diff(y_nb, c.y_nb_ref) < 1e-5);
    CHECK(rel_diff(dx, c.dx_ref) < 1e-5);
    CHECK(rel_diff(dw, c.dw_ref) < 1e-5);
    CHECK(rel_diff(db, c.db_ref) < 1e-5);
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
    "mb2ic5ih16oc13kh3ph1",              // implicit forward: 16-wide rows, 13 = 12 + 1 channels
    "mb1ic2ih4iw64oc7kh3ph1",            // implicit forward: two 32-pixel tiles per row
    "mb2ic3ih8oc5kh3ph1",                // implicit forward: four 8-wide rows per tile
    "mb8ic5ih8oc7kh5ph2",                // row mode: groups of 4 images
    "mb4ic4ih16iw16oc9kh3ph1",           // row mode: groups of 2
    "mb6ic5ih8oc7kh5ph2",                // no row mode: 6 images do not make groups of 4
    "mb8ic60ih8oc13kh5ph2",              // 1,500 taps in k-blocks of any cache size, row mode: tap ranges start inside one
    "mb4ic2ih4iw4oc3kh3ph3",             // rows wholly in the padding (no kernel row reaches the image)
    "mb4ic8ih16oc12kh3ph1g2",            // groups on the implicit tiles (each group 4 -> 6 channels)
    "mb8ic6ih8oc14kh5ph2g2",             // groups in row mode
    "mb2ic8ih7oc6kh1g2",                 // grouped 1x1
    "mb2ic9ih9oc6kh3sh2ph1g3",           // 3 groups, strided: im2col per group
    "mb3ic60ih13oc60kh3ph1",             // 13-wide rows: gather tiles forward and backward-data, slivers of 64
    "mb2ic3ih31oc32kh11sh4ph2",          // AlexNet conv1's kind: gather tiles forward, stride 4
    "mb2ic5ih13oc8oh12kh3ph0",           // benchdnn's asymmetric padding: none before, 1 after
    "mb2ic32ih13oc32oh12kh3ph0",         // the same on the gather tiles
    "mb1ic1040ih5oc32kh3ph1",            // gather tiles, channels last, a pixel's channels in runs of a k-block or less
    "mb2ic64ih13oc64kh3sh2ph1g2",        // gather tiles, channels last, strided, grouped
    "mb2ic32ih13oc4kh3ph1",              // backward-data on the gather tiles, 4 channels: not channels last
    "mb2ic6ih16oc16oh17kh3ph1",          // 1 before, 2 after, on the implicit tiles
};

// Padding after the input that is negative (its last rows and columns unread): oneDNN 2.6
// refuses it, the own and BLIS backends take it.
const char* kNegativeEndPadding[] = {"mb2ic4ih13oc8oh5kh3sh2", "mb2ic32ih13oc32oh5kh3sh2ph1"};

}  // namespace

TEST_CASE("every convolution backend matches the direct reference") {
    std::vector<ConvBackend> backends;
    for (ConvBackend be : {ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn}) {
        if (conv_backend_available(be)) backends.push_back(be);
        else MESSAGE("backend " << conv_backend_name(be) << " is not in this build");
    }
    for (const char* desc : kDescriptors) {
        const ReferenceCase c(desc);
        for (ConvBackend be : backends)
            for (int threads : {1, 2}) check_backend(be, c, threads);
    }
}

TEST_CASE("negative padding after the input: own and BLIS match the reference, oneDNN refuses") {
    for (const char* desc : kNegativeEndPadding) {
        const ReferenceCase c(desc);
        CHECK(c.p.geom.pad_b() < 0);
        for (int threads : {1, 2}) {
            check_backend(ConvBackend::Own, c, threads);
            if (conv_backend_available(ConvBackend::Blis)) check_backend(ConvBackend::Blis, c, threads);
        }
        if (conv_backend_available(ConvBackend::Onednn))
            CHECK_THROWS(make_conv_kernel(c.p, ConvBackend::Onednn, 1));
    }
}

TEST_CASE("benchdnn descriptors: padding after the input from the output size, plain errors for other kinds") {
    const ConvGeometry a = parse_problem("ic32oc13_ih13oh12kh3ph0").conv.geom;
    CHECK(a.pad_h == 0);
    CHECK(a.pad_b() == 1);
    CHECK(a.pad_r() == 1);  // ow and the width's padding copy the height's
    CHECK(a.out_h() == 12);
    CHECK(a.out_w() == 12);
    const ConvGeometry sym = parse_problem("ic8oc8ih13oh13kh3ph1").conv.geom;
    CHECK(sym.pad_bottom == ConvGeometry::kSameAsStart);
    const ConvGeometry derived = parse_problem("ic4ih84oc16oh20kh8sh4").conv.geom;  // no ph: half the total
    CHECK(derived.pad_h + derived.pad_b() == (20 - 1) * 4 + 8 - 84);
    CHECK(derived.out_h() == 20);
    CHECK_THROWS_WITH(parse_problem("ic19oc32_iw13ow12kw3pw1"), doctest::Contains("a 1-D convolution"));
    CHECK_THROWS_WITH(parse_problem("ic32oc13_id13od11kd3pd0_ih13oh12kh3ph0"), doctest::Contains("a 3-D convolution"));
    CHECK_THROWS_WITH(parse_problem("ic8oc8ih13oh40kh3"), doctest::Contains("oh40 does not fit the geometry"));
}

TEST_CASE("a grouped convolution on the own backend runs each group on the implicit tiles where its shape allows") {
    const std::unique_ptr<ConvKernel> k = make_conv_kernel(parse_problem("mb4ic8ih16oc12kh3ph1g2").conv, ConvBackend::Own, 2);
    CAPTURE(k->describe());
    CHECK(k->describe().rfind("each of 2 groups: ", 0) == 0);
    if (micro_kernel_for(isa_gate()).kernel.indirect) CHECK(k->describe().find("fwd implicit_") != std::string::npos);
}

TEST_CASE("rows that split into no pixel tiles, and strided layers, take the gather tiles") {
    if (!micro_kernel_for(isa_gate()).kernel.gather_a) return;  // the reference micro-kernel: im2col for all
    const std::string odd = make_conv_kernel(parse_problem("mb2ic32ih13oc32kh3ph1").conv, ConvBackend::Own, 2)->describe();
    CAPTURE(odd);
    CHECK(odd.rfind("fwd gather_", 0) == 0);
    CHECK(odd.find("bwd_data gather_") != std::string::npos);
    const std::string strided = make_conv_kernel(parse_problem("mb2ic3ih31oc32kh11sh4ph2").conv, ConvBackend::Own, 2)->describe();
    CAPTURE(strided);
    CHECK(strided.rfind("fwd gather_", 0) == 0);
    CHECK(strided.find("bwd_data col2im+") != std::string::npos);
}

TEST_CASE("transpose: every implementation the gate allows matches the definition") {
    std::mt19937 rng(11);
    for (int rows : {1, 5, 6, 16, 17, 32, 45})
        for (int cols : {1, 3, 16, 31, 64, 75}) {
            const int ld_src = cols + 3, ld_dst = rows + 5;
            const std::vector<float> src = random_vector(static_cast<size_t>(rows) * ld_src, rng);
            std::vector<float> want(static_cast<size_t>(cols) * ld_dst, -7.0f);
            for (int r = 0; r < rows; ++r)
                for (int c = 0; c < cols; ++c) want[static_cast<size_t>(c) * ld_dst + r] = src[static_cast<size_t>(r) * ld_src + c];
            for (const IsaGate& gate : allowed_gates()) {
                ImplChoice choice;
                const TransposeFn fn = choose_transpose(gate, &choice);
                std::vector<float> out(want.size(), -7.0f);
                fn(src.data(), rows, cols, ld_src, out.data(), ld_dst);
                CAPTURE(rows);
                CAPTURE(cols);
                CAPTURE(choice.name);
                CHECK(out == want);  // exact: a transpose moves values, and must leave the gaps alone
            }
        }
}

TEST_CASE("im2col_slivers writes the transpose of im2col in nr-wide slivers") {
    std::mt19937 rng(12);
    for (const char* desc : {"mb1ic3ih32oc32oh32kh5ph2", "mb1ic5ih9oc4kh3sh2ph1", "mb1ic7ih6iw11oc2kh2kw3", "mb1ic2ih8oc2kh3dh2ph2"})
        for (int nr : {12, 16, 32}) {
            const ConvGeometry g = parse_problem(desc).conv.geom;
            const int K = g.col_rows(), P = g.col_cols(), K_round = (K + nr - 1) / nr * nr;
            const std::vector<float> img = random_vector(static_cast<size_t>(g.channels) * g.height * g.width, rng);
            std::vector<float> col(static_cast<size_t>(K) * P), slivers(static_cast<size_t>(K_round) * P, -7.0f),
                scratch(im2col_scratch_floats(g, nr));
            im2col(img.data(), g, col.data(), scratch.data());
            im2col_slivers(img.data(), g, nr, slivers.data(), scratch.data());
            size_t wrong = 0;
            for (int r = 0; r < K_round; ++r)
                for (int p = 0; p < P; ++p) {
                    const float want = r < K ? col[static_cast<size_t>(r) * P + p] : 0.0f;
                    wrong += slivers[static_cast<size_t>(r / nr) * P * nr + static_cast<size_t>(p) * nr + r % nr] != want;
                }
            CAPTURE(desc);
            CAPTURE(nr);
            CHECK(wrong == 0);
        }
}

TEST_CASE("backend names round-trip and unknown names are refused") {
    for (ConvBackend be : {ConvBackend::Own, ConvBackend::Blis, ConvBackend::Onednn, ConvBackend::Reference})
        CHECK(conv_backend_from_name(conv_backend_name(be)) == be);
    CHECK(!conv_backend_from_name("cudnn"));
}
