#include "nn/net_spec.h"

#include <algorithm>

#include "nn/config_error.h"
#include "nn/field_reader.h"
#include "nn/layer_factory.h"

namespace rudra::nn {
namespace {

Phase read_phase(FieldReader& r) {
    if (!r.has("phase")) r.fail("needs 'phase: TRAIN' or 'phase: TEST'");
    return r.enumeration("phase", "TRAIN", {"TRAIN", "TEST"}) == "TRAIN" ? Phase::Train : Phase::Test;
}

std::vector<Phase> read_rules(FieldReader& layer, const std::string& key, const std::string& what) {
    std::vector<Phase> out;
    for (const TextField* f : layer.messages(key)) {
        FieldReader r(f->message, layer.file(), what + " " + key);
        out.push_back(read_phase(r));
        r.finish();  // stage / min_level / max_level are not supported: reported as unknown
    }
    return out;
}

Shape read_blob_shape(const TextMessage& m, const std::string& file, const std::string& what) {
    FieldReader r(m, file, what);
    auto dims = r.integers("dim", 1, 1 << 30);
    r.finish();
    if (dims.empty()) r.fail("shape has no 'dim'");
    std::vector<int> d(dims.begin(), dims.end());
    return Shape(d);
}

TransformSpec read_transform(FieldReader& layer, std::vector<std::string>& notes) {
    TransformSpec t;
    const TextMessage* m = layer.message("transform_param");
    if (!m) return t;
    FieldReader r(*m, layer.file(), layer.what() + " transform_param");
    t.scale = static_cast<float>(r.number("scale", 1.0));
    t.mean_file = r.string("mean_file", "");
    for (double v : r.numbers("mean_value", -1e30, 1e30)) t.mean_values.push_back(static_cast<float>(v));
    t.mirror = r.boolean("mirror", false);
    t.crop_size = static_cast<int>(r.integer("crop_size", 0, 0, 1 << 20));
    r.ignore("force_color", "images are read in their stored channels", notes);
    r.ignore("force_gray", "images are read in their stored channels", notes);
    r.finish();
    if (!t.mean_file.empty() && !t.mean_values.empty()) r.fail("give mean_file or mean_value, not both");
    return t;
}

LayerSpec read_layer(const TextField& field, const std::string& file, std::vector<std::string>& notes) {
    LayerSpec s;
    s.line = field.line;
    s.message = field.message;
    FieldReader r(field.message, file, "layer at line " + std::to_string(field.line));
    s.name = r.string("name", "");
    s.type = r.string("type", "");
    if (s.type.empty()) r.fail("missing 'type'");
    if (s.name.empty()) s.name = s.type + "@" + std::to_string(field.line);
    const std::string what = "layer '" + s.name + "' (" + s.type + ")";
    FieldReader layer(field.message, file, what);
    layer.accept("name");
    layer.accept("type");
    s.bottoms = layer.strings("bottom");
    s.tops = layer.strings("top");
    for (const TextField* p : layer.messages("param")) {
        FieldReader pr(p->message, file, what + " param");
        ParamMult m;
        m.lr_mult = static_cast<float>(pr.number("lr_mult", 1.0, 0.0));
        m.decay_mult = static_cast<float>(pr.number("decay_mult", 1.0, 0.0));
        if (pr.has("name")) pr.fail(*pr.field("name"), "shared parameters (param { name }) are not supported");
        pr.finish();
        s.param_mults.push_back(m);
    }
    for (double w : layer.numbers("loss_weight", -1e30, 1e30)) s.loss_weights.push_back(static_cast<float>(w));
    s.include = read_rules(layer, "include", what);
    s.exclude = read_rules(layer, "exclude", what);
    if (s.tops.empty() && s.type != "Silence") layer.fail("has no 'top'");

    if (s.is_data()) {
        if (s.tops.size() != 2 && s.tops.size() != 1) layer.fail("a Data layer has tops (data[, label])");
        const bool images = s.type == "ImageData";
        const char* block = images ? "image_data_param" : "data_param";
        const TextMessage* dp = layer.message(block);
        if (!dp) layer.fail(std::string("missing ") + block + " (its batch_size sets the mini-batch)");
        FieldReader d(*dp, file, what + " " + block);
        s.batch_size = static_cast<int>(d.integer("batch_size", 0, 1, 1 << 20));
        d.require("batch_size");
        s.source = d.string("source", "");
        if (images) {
            d.require("source");
            s.root_folder = d.string("root_folder", "");
            s.new_height = static_cast<int>(d.integer("new_height", 0, 0, 1 << 15));
            s.new_width = static_cast<int>(d.integer("new_width", 0, 0, 1 << 15));
            if ((s.new_height > 0) != (s.new_width > 0)) d.fail("give both new_height and new_width, or neither");
            s.is_color = d.boolean("is_color", true);
            d.ignore("shuffle", "training samples are always drawn in a seeded random order", notes);
            d.ignore("rand_skip", "training samples are always drawn in a seeded random order", notes);
        } else {
            if (d.has("backend")) s.backend = d.enumeration("backend", "LMDB", {"LMDB", "LEVELDB"});
            d.ignore("rand_skip", "training samples are always drawn in a seeded random order", notes);
        }
        d.ignore("prefetch", "batches are prefetched by the decode threads (--decode-threads)", notes);
        d.finish();
        s.transform = read_transform(layer, notes);
        layer.finish();
    } else if (s.is_input()) {
        const TextMessage* ip = layer.message("input_param");
        if (!ip) layer.fail("missing input_param { shape { dim ... } }");
        FieldReader in(*ip, file, what + " input_param");
        for (const TextField* f : in.messages("shape")) s.input_shapes.push_back(read_blob_shape(f->message, file, what));
        in.finish();
        layer.finish();
        if (s.input_shapes.size() != s.tops.size() && s.input_shapes.size() != 1)
            layer.fail("input_param needs one shape, or one per top");
    } else {
        // Validate the layer's own block now, so that errors show before any work starts.
        for (Phase p : {Phase::Train, Phase::Test})
            if (s.applies_to(p)) {
                make_layer(s, file, p, KernelOptions{});
                break;
            }
    }
    return s;
}

// Old-style net inputs: `input: "data"` with `input_shape { dim... }` or four `input_dim`.
void read_legacy_inputs(FieldReader& r, NetSpec& net) {
    auto names = r.strings("input");
    if (names.empty()) {
        if (r.has("input_shape") || r.has("input_dim")) r.fail("input_shape/input_dim without 'input'");
        return;
    }
    LayerSpec s;
    s.type = "Input";
    s.name = "input";
    s.tops = names;
    for (const TextField* f : r.messages("input_shape"))
        s.input_shapes.push_back(read_blob_shape(f->message, net.file, "input_shape"));
    auto dims = r.integers("input_dim", 1, 1 << 30);
    if (!dims.empty()) {
        if (dims.size() != 4 * names.size()) r.fail("input_dim needs four values per input");
        for (size_t i = 0; i < names.size(); ++i)
            s.input_shapes.push_back(Shape{static_cast<int>(dims[4 * i]), static_cast<int>(dims[4 * i + 1]),
                                           static_cast<int>(dims[4 * i + 2]), static_cast<int>(dims[4 * i + 3])});
    }
    if (s.input_shapes.size() != names.size()) r.fail("each 'input' needs a shape");
    net.layers.push_back(std::move(s));
}

}  // namespace

bool LayerSpec::applies_to(Phase p) const {
    if (!include.empty() && std::find(include.begin(), include.end(), p) == include.end()) return false;
    return std::find(exclude.begin(), exclude.end(), p) == exclude.end();
}

const LayerSpec* NetSpec::data_layer(Phase phase) const {
    for (const auto& l : layers)
        if (l.is_data() && l.applies_to(phase)) return &l;
    return nullptr;
}

NetSpec parse_net_spec(const std::string& text, const std::string& file) {
    TextMessage root = parse_prototxt(text, file);
    NetSpec net;
    net.file = file;
    FieldReader r(root, file, "net");
    net.name = r.string("name", "");
    if (r.has("layers"))
        r.fail(*r.field("layers"),
               "the V1 'layers' format is not supported; convert it with Caffe's upgrade_net_proto_text");
    read_legacy_inputs(r, net);
    r.ignore("force_backward", "backward always runs where gradients are needed", net.notes);
    r.ignore("debug_info", "no debug output", net.notes);
    r.ignore("state", "the phase is set by the command", net.notes);
    for (const TextField* f : r.messages("layer")) net.layers.push_back(read_layer(*f, file, net.notes));
    r.finish();
    if (net.layers.empty()) r.fail("the net has no layers");
    return net;
}

NetSpec load_net_spec(const std::string& path) {
    return parse_net_spec(read_text_file(path), path);
}

}  // namespace rudra::nn
