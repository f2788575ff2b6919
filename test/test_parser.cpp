// Prototxt nets and solvers: published Caffe files load unchanged; every kind of bad file gets an
// error naming the file, the line and the problem.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>

#include "nn/config_error.h"
#include "nn/net.h"
#include "nn/net_spec.h"
#include "nn/prototxt.h"
#include "nn/solver_spec.h"

using namespace rudra::nn;

namespace {

const std::string kSrc = RUDRA_SOURCE_DIR;

size_t params_of(const std::string& path, std::array<int, 3> chw, Phase phase = Phase::Train, int batch = 0) {
    NetOptions o;
    o.phase = phase;
    o.data_chw = chw;
    o.batch = batch;
    Net net(load_net_spec(path), o);
    return net.params().learnable_count();
}

// Parses `text` as a net and builds it for TRAIN on 1x8x8 data; returns the error message.
std::string net_error(const std::string& text) {
    try {
        NetSpec spec = parse_net_spec(text, "bad.prototxt");
        NetOptions o;
        o.data_chw = {1, 8, 8};
        Net net(spec, o);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string solver_error(const std::string& text) {
    try {
        parse_solver_spec(text, kSrc + "/models/cifar10_full_28/solver_under_test.prototxt");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

const std::string kData =
    "layer { name: 'd' type: 'Data' top: 'data' top: 'label' data_param { batch_size: 2 } }\n";

}  // namespace

TEST_CASE("Caffe's cifar10_full loads unchanged in deploy and train/test form: 89,578 parameters") {
    CHECK(params_of(kSrc + "/models/cifar10_full/cifar10_full.prototxt", {0, 0, 0}) == 89578);
    CHECK(params_of(kSrc + "/models/cifar10_full/cifar10_full_train_test.prototxt", {3, 32, 32}) == 89578);
    CHECK(params_of(kSrc + "/models/cifar10_full/cifar10_full_train_test.prototxt", {3, 32, 32}, Phase::Test) == 89578);
    // 28x28: pooling gives 3x3x64 before ip1, so ip1 has 576*10+10 weights.
    CHECK(params_of(kSrc + "/models/cifar10_full_28/cifar10_full_28_train_test.prototxt", {1, 28, 28}) == 83498);
}

TEST_CASE("LeNet, cifar10_quick and AlexNet load") {
    CHECK(params_of(kSrc + "/test/models/lenet_train_test.prototxt", {1, 28, 28}) == 431080);
    CHECK(params_of(kSrc + "/test/models/cifar10_quick_train_test.prototxt", {3, 32, 32}) == 145578);
    CHECK(params_of(kSrc + "/test/models/alexnet_deploy.prototxt", {0, 0, 0}, Phase::Test, 1) == 60965224);
}

TEST_CASE("AlexNet-style Data layer: crop_size and mirror set the input shape") {
    const std::string text = R"(
        layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
                transform_param { mirror: true crop_size: 227 mean_file: "imagenet_mean.binaryproto" }
                data_param { source: "ilsvrc12_train_lmdb" batch_size: 2 backend: LMDB } }
        layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
                param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
                convolution_param { num_output: 96 kernel_size: 11 stride: 4
                                    weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" value: 0 } } }
    )";
    NetSpec spec = parse_net_spec(text, "alexnet_part.prototxt");
    NetOptions o;
    o.data_chw = {3, 256, 256};
    Net net(spec, o);
    CHECK(net.input_data().shape == Shape{2, 3, 227, 227});
    CHECK(net.blob("conv1").shape == Shape{2, 96, 55, 55});
    REQUIRE(net.transform() != nullptr);
    CHECK(net.transform()->mirror);
    CHECK(net.transform()->crop_size == 227);
    CHECK(net.params().entries()[1].decay_mult == 0.0f);
    CHECK(net.params().entries()[1].lr_mult == 2.0f);
    // The source and backend are kept for the data setup to read (session/data_setup.h).
    const LayerSpec* data = spec.data_layer(Phase::Train);
    REQUIRE(data != nullptr);
    CHECK(data->source == "ilsvrc12_train_lmdb");
    CHECK(data->backend == "LMDB");
    for (const auto& n : spec.notes) CHECK(n.find("source") == std::string::npos);
}

TEST_CASE("solver files: Caffe's own and the shipped ones") {
    SolverSpec lenet = load_solver_spec(kSrc + "/test/models/lenet_solver.prototxt");
    CHECK(lenet.lr.name == "inv");
    CHECK(lenet.lr.rate(0) == doctest::Approx(0.01));
    CHECK(lenet.lr.rate(10000) == doctest::Approx(0.01 * std::pow(1 + 0.0001 * 10000, -0.75)));
    CHECK(lenet.net == kSrc + "/test/models/lenet_train_test.prototxt");  // Caffe-root path found beside the solver
    bool noted_mode = false;
    for (const auto& n : lenet.notes) noted_mode = noted_mode || n.find("solver_mode") != std::string::npos;
    CHECK(noted_mode);

    SolverSpec full = load_solver_spec(kSrc + "/models/cifar10_full/cifar10_full_solver.prototxt");
    CHECK(full.max_iter == 60000);
    CHECK(full.weight_decay == doctest::Approx(0.004));
    SolverSpec f28 = load_solver_spec(kSrc + "/models/cifar10_full_28/cifar10_full_28_solver.prototxt");
    CHECK(f28.lr.name == "multistep");
    CHECK(f28.lr.rate(5624) == doctest::Approx(0.05));
    CHECK(f28.lr.rate(5625) == doctest::Approx(0.005));
    CHECK(f28.lr.rate(9000) == doctest::Approx(0.0005));
}

TEST_CASE("the text format: comments, separators, nested blocks, string escapes") {
    TextMessage m = parse_prototxt("a: 1, b: \"x\\\"y\" # comment\nc < d: -2.5e-3 >; e { } f: 'p' 'q'", "t");
    REQUIRE(m.fields.size() == 5);
    CHECK(m.fields[1].text == "x\"y");
    CHECK(m.fields[2].message.fields[0].text == "-2.5e-3");
    CHECK(m.fields[4].text == "pq");
    CHECK(m.fields[2].line == 2);
}

TEST_CASE("bad net files name the file, the line and the problem") {
    struct Case {
        const char* what;
        std::string text;
        std::string expect;
    };
    const Case cases[] = {
        {"unterminated block", kData + "layer { name: 'c' type: 'ReLU'\n", "bad.prototxt:3:1: unexpected end of file"},
        {"unterminated string", "name: 'abc\n", "bad.prototxt:1:"},
        {"missing colon", "name 'x'", "bad.prototxt:1:6: expected ':'"},
        {"stray character", kData + "layer { name: 'c' type: 'ReLU' bottom: 'data' top: 'c' } }", "bad.prototxt:2:58"},
        {"unknown field", kData + "layer { name: 'c' type: 'Convolution' bottom: 'data' top: 'c'\n"
                                  "convolution_param { num_outputs: 3 kernel_size: 3 } }",
         "bad.prototxt:3:21: layer 'c' (Convolution) convolution_param: unknown field 'num_outputs'"},
        {"unknown layer field", kData + "layer { name: 'c' type: 'ReLU' bottom: 'data' top: 'c' pooling_param { } }",
         "bad.prototxt:2:56: layer 'c' (ReLU): unknown field 'pooling_param'"},
        {"unknown layer type", kData + "layer { name: 'c' type: 'Convolutoin' bottom: 'data' top: 'c' }",
         "bad.prototxt:2:1: layer 'c': unknown layer type 'Convolutoin'"},
        {"wrong value type", kData + "layer { name: 'c' type: 'Convolution' bottom: 'data' top: 'c' "
                                     "convolution_param { num_output: 'ten' kernel_size: 3 } }",
         "needs a number"},
        {"out of range", kData + "layer { name: 'c' type: 'Convolution' bottom: 'data' top: 'c' "
                                 "convolution_param { num_output: -4 kernel_size: 3 } }",
         "out of range"},
        {"missing required", kData + "layer { name: 'c' type: 'Convolution' bottom: 'data' top: 'c' "
                                     "convolution_param { num_output: 4 } }",
         "missing 'kernel_size'"},
        {"repeated single field", kData + "layer { name: 'c' type: 'InnerProduct' bottom: 'data' top: 'c' "
                                          "inner_product_param { num_output: 4 num_output: 5 } }",
         "given more than once"},
        {"bad enum", kData + "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'p' "
                             "pooling_param { pool: MIN kernel_size: 2 } }",
         "unknown value 'MIN' (expected MAX, AVE, STOCHASTIC)"},
        {"V1 format", "layers { name: 'c' type: CONVOLUTION }", "bad.prototxt:1:1: net: the V1 'layers' format"},
        {"unknown bottom", kData + "layer { name: 'r' type: 'ReLU' bottom: 'nothing' top: 'r' }",
         "bad.prototxt:2: layer 'r': unknown bottom blob 'nothing'"},
        {"shape misfit", kData + "layer { name: 'c' type: 'Convolution' bottom: 'data' top: 'c' "
                                 "convolution_param { num_output: 4 kernel_size: 11 } }",
         "kernel larger than the padded input"},
        {"even LRN size", kData + "layer { name: 'n' type: 'LRN' bottom: 'data' top: 'n' lrn_param { local_size: 4 } }",
         "local_size must be odd"},
        {"no layers", "name: 'empty'", "the net has no layers"},
        {"no data layer", "layer { name: 'r' type: 'ReLU' bottom: 'x' top: 'y' }", "unknown bottom blob 'x'"},
        {"in place not allowed", kData + "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'data' "
                                         "pooling_param { kernel_size: 2 } }",
         "cannot run in place"},
        {"Data without batch size", "layer { name: 'd' type: 'Data' top: 'data' data_param { source: 'x' } }",
         "missing 'batch_size'"},
        {"nesting too deep", [] {
             std::string deep;
             for (int i = 0; i < 50000; ++i) deep += "a { ";
             return deep;
         }(),
         "bad.prototxt:1:403: messages nested more than 100 levels deep"},
        {"duplicate layer name", kData + "layer { name: 'r' type: 'ReLU' bottom: 'data' top: 'a' }\n"
                                         "layer { name: 'r' type: 'ReLU' bottom: 'a' top: 'b' }",
         "bad.prototxt:3: layer 'r': the name is used again (first at line 2)"},
    };
    for (const Case& c : cases) {
        CAPTURE(std::string(c.what));
        const std::string msg = net_error(c.text);
        CAPTURE(msg);
        CHECK(msg.find(c.expect) != std::string::npos);
    }
}

TEST_CASE("bad solver files name the file, the line and the problem") {
    const std::string net = "net: 'cifar10_full_28_train_test.prototxt'\n";
    CHECK(solver_error(net + "base_lr: 0.1") == "(no error)");
    CHECK(solver_error(net + "base_lrr: 0.1").find("solver_under_test.prototxt:2:1: solver: unknown field 'base_lrr'") !=
          std::string::npos);
    CHECK(solver_error("base_lr: 0.1").find("missing 'net'") != std::string::npos);
    CHECK(solver_error("net: 'nowhere.prototxt' base_lr: 0.1").find("net file 'nowhere.prototxt' not found") !=
          std::string::npos);
    CHECK(solver_error(net).find("missing 'base_lr'") != std::string::npos);
    CHECK(solver_error(net + "base_lr: 0.1 lr_policy: 'cosine'").find("lr_policy 'cosine' is not supported") !=
          std::string::npos);
    CHECK(solver_error(net + "base_lr: 0.1 lr_policy: 'step'").find("needs 'stepsize'") != std::string::npos);
    CHECK(solver_error(net + "base_lr: 0.1 type: 'Adam'").find("solver type 'Adam' is not supported") != std::string::npos);
    CHECK(solver_error(net + "base_lr: 0.1 momentum: 1.5").find("out of range") != std::string::npos);
    CHECK(solver_error(net + "base_lr: 0.1 max_iter: 2.5").find("needs an integer") != std::string::npos);
}

TEST_CASE("ImageData layers: the list, its root folder and the resize are kept; half a resize is refused") {
    const std::string text = R"(
        layer { name: "data" type: "ImageData" top: "data" top: "label"
                image_data_param { source: "train.txt" root_folder: "images/" batch_size: 8
                                   new_height: 256 new_width: 256 is_color: false shuffle: true } }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
    )";
    NetSpec spec = parse_net_spec(text, "list.prototxt");
    const LayerSpec* d = spec.data_layer(Phase::Train);
    REQUIRE(d != nullptr);
    CHECK(d->type == "ImageData");
    CHECK(d->source == "train.txt");
    CHECK(d->root_folder == "images/");
    CHECK(d->new_height == 256);
    CHECK(d->new_width == 256);
    CHECK_FALSE(d->is_color);
    CHECK(d->batch_size == 8);
    std::string half = text;
    half.replace(half.find(" new_width: 256"), 15, "");
    CHECK_THROWS_WITH_AS(parse_net_spec(half, "half.prototxt"),
                         doctest::Contains("give both new_height and new_width"), ConfigError);
    std::string no_source = text;
    no_source.replace(no_source.find("source: \"train.txt\""), 19, "");
    CHECK_THROWS_AS(parse_net_spec(no_source, "nosource.prototxt"), ConfigError);
}
