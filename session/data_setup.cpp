#include "session/data_setup.h"

#include <filesystem>
#include <stdexcept>

#include "data/mean_file.h"
#include "data/sample_reader.h"
#include "data/skip_log.h"

namespace rudra::session {
namespace {

namespace fs = std::filesystem;
using Kind = DataPlan::Kind;

bool is_bundle(const std::string& dir) {
    std::error_code ec;
    for (const char* f : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz", "data_batch_1.bin"})
        if (fs::exists(fs::path(dir) / f, ec)) return true;
    return false;
}

std::string layer_place(const nn::NetSpec& net, const nn::LayerSpec& l) {
    return net.file + ":" + std::to_string(l.line) + ": layer '" + l.name + "' (" + l.type + ")";
}

// A Data/ImageData layer's source, as Caffe resolves it or remapped under --data DIR.
DataPlan::Part resolve(const nn::NetSpec& net, const nn::LayerSpec& l, const std::string& dir) {
    std::vector<std::string> tried;
    std::string found;
    auto consider = [&](const fs::path& p) {
        if (!found.empty()) return;
        tried.push_back(p.string());
        std::error_code ec;
        if (fs::exists(p, ec)) found = p.string();
    };
    const fs::path source(l.source);
    if (dir.empty() || source.is_absolute()) consider(source);
    if (!dir.empty()) {
        consider(fs::path(dir) / source);
        if (source.has_parent_path()) consider(fs::path(dir) / source.filename());
    }
    if (found.empty()) {
        std::string where;
        for (const auto& t : tried) where += (where.empty() ? "" : ", ") + t;
        throw data::DataError(layer_place(net, l) + ": its source '" + l.source + "' does not exist (looked for " +
                              where + ")" +
                              (dir.empty() ? ": run from the folder the net's paths are relative to, or give --data "
                                             "DIR to read them under DIR"
                                           : ""));
    }
    DataPlan::Part p;
    p.path = found;
    if (l.type == "ImageData") {
        if (fs::is_directory(found))
            throw data::DataError(layer_place(net, l) + ": source " + found +
                                  " is a folder; an ImageData layer reads a list file of 'path label' lines");
        p.kind = Kind::ImageList;
        p.root_folder = l.root_folder;
        // A relative root_folder is remapped like the source.
        if (!dir.empty() && !l.root_folder.empty() && fs::path(l.root_folder).is_relative() &&
            !fs::exists(l.root_folder)) {
            const fs::path under = fs::path(dir) / l.root_folder;
            p.root_folder = under.string();
            if (p.root_folder.back() != '/' && l.root_folder.back() == '/') p.root_folder += '/';
        }
        p.channels = l.is_color ? 3 : 1;
        p.new_height = l.new_height;
        p.new_width = l.new_width;
        return p;
    }
    if (data::is_lmdb(found)) {
        if (l.backend == "LEVELDB")
            throw data::DataError(layer_place(net, l) + ": says backend LEVELDB, but " + found +
                                  " is an LMDB: set backend: LMDB");
        p.kind = Kind::Lmdb;
    } else if (is_bundle(found)) {
        p.kind = Kind::Bundle;
    } else if (data::is_class_folder_set(found)) {
        p.kind = Kind::ClassFolders;
    } else if (fs::exists(fs::path(found) / "CURRENT") || l.backend == "LEVELDB") {
        throw data::DataError(layer_place(net, l) + ": " + found +
                              " is not an LMDB; LevelDB sets are not read: convert it to an LMDB");
    } else {
        throw data::DataError(layer_place(net, l) + ": source " + found +
                              " is neither an LMDB (a folder with data.mdb), a folder of class folders, nor a folder "
                              "of IDX or CIFAR-10 files");
    }
    return p;
}

}  // namespace

namespace {

DataPlan plan_sources(const DataOptions& o, const nn::NetSpec& net) {
    DataPlan plan;
    const std::string& dir = o.dir;
    if (!dir.empty() && !fs::is_directory(dir) && !fs::exists(dir))
        throw data::DataError(dir + ": no such data folder (--data)");
    const nn::LayerSpec* layers[2] = {net.data_layer(nn::Phase::Train), net.data_layer(nn::Phase::Test)};
    auto note_sources = [&](const std::string& why) {
        for (const nn::LayerSpec* l : layers)
            if (l && !l->source.empty())
                plan.notes.push_back(layer_place(net, *l) + ": source '" + l->source + "' not read: " + why);
    };
    if (!dir.empty() && is_bundle(dir)) {
        plan.bundle_dir = dir;
        note_sources("--data " + dir + " holds the data set");
        return plan;
    }
    if (!dir.empty()) {
        const fs::path train = fs::path(dir) / "train";
        fs::path test;
        for (const char* name : {"val", "test"})
            if (test.empty() && fs::is_directory(fs::path(dir) / name)) test = fs::path(dir) / name;
        if (data::is_class_folder_set(train.string()) && !test.empty()) {
            plan.train.kind = plan.test.kind = Kind::ClassFolders;
            plan.train.path = train.string();
            plan.test.path = test.string();
            note_sources("--data " + dir + " holds class folders in train/ and " + test.filename().string() + "/");
            return plan;
        }
    }
    const bool named = (layers[0] && !layers[0]->source.empty()) || (layers[1] && !layers[1]->source.empty());
    if (!named) {
        if (!dir.empty())
            throw data::DataError(dir + ": no data set found (IDX files train-images-idx3-ubyte[.gz] ..., CIFAR-10 "
                                        "data_batch_N.bin + test_batch.bin, or train/ and val/ folders of class "
                                        "folders), and the net's Data layers name no source");
        plan.bundle_dir = kDefaultDataDir;
        return plan;
    }
    DataPlan::Part parts[2];
    for (int i = 0; i < 2; ++i) {
        const nn::LayerSpec* l = layers[i];
        if (l && !l->source.empty()) {
            parts[i] = resolve(net, *l, dir);
        } else {
            // A phase without a source of its own reads the other phase's set.
            const nn::LayerSpec* other = layers[1 - i];
            parts[i] = resolve(net, *other, dir);
        }
    }
    // Folders of IDX or CIFAR-10 files hold both sets: TRAIN reads the training part of its
    // folder, TEST the test part of its own.
    for (int i = 0; i < 2; ++i)
        if (parts[i].kind == Kind::Bundle) {
            if (!plan.bundle_dir.empty() && plan.bundle_dir != parts[i].path)
                throw data::DataError(net.file + ": the TRAIN and TEST Data layers name two folders of IDX or CIFAR-10 "
                                                 "files (" + plan.bundle_dir + ", " + parts[i].path +
                                      "); each holds both sets: name one");
            plan.bundle_dir = parts[i].path;
        }
    plan.train = parts[0];
    plan.test = parts[1];
    return plan;
}

// The layers' mean_file, resolved as their sources are, or --mean.
void plan_mean(const DataOptions& o, const nn::NetSpec& net, DataPlan& plan) {
    if (o.mean == "compute") {
        plan.compute_mean = true;
        return;
    }
    if (!o.mean.empty()) {
        if (!fs::is_regular_file(o.mean)) throw data::DataError(o.mean + ": no such mean file (--mean)");
        plan.mean_file = o.mean;
        return;
    }
    const nn::LayerSpec* layer = nullptr;
    for (nn::Phase p : {nn::Phase::Train, nn::Phase::Test})
        if (const nn::LayerSpec* l = net.data_layer(p); !layer && l && !l->transform.mean_file.empty()) layer = l;
    if (!layer) return;
    const fs::path named(layer->transform.mean_file);
    std::vector<fs::path> tried;
    if (o.dir.empty() || named.is_absolute()) tried.push_back(named);
    if (!o.dir.empty()) {
        tried.push_back(fs::path(o.dir) / named);
        if (named.has_parent_path()) tried.push_back(fs::path(o.dir) / named.filename());
    }
    for (const fs::path& p : tried)
        if (fs::is_regular_file(p)) {
            plan.mean_file = p.string();
            return;
        }
    // IDX and CIFAR-10 folders come without a mean file: the mean is computed, as the net asks.
    if (plan.train.kind == Kind::Bundle) {
        plan.compute_mean = true;
        plan.notes.push_back(layer_place(net, *layer) + ": mean_file '" + layer->transform.mean_file +
                             "' not found: subtracting the per-pixel mean of the training set instead");
        return;
    }
    std::string where;
    for (const auto& t : tried) where += (where.empty() ? "" : ", ") + t.string();
    throw data::DataError(layer_place(net, *layer) + ": its mean_file '" + layer->transform.mean_file +
                          "' does not exist (looked for " + where +
                          "): make one with `rudra mean`, or give --mean FILE, or --mean compute to compute it over "
                          "the training set");
}

}  // namespace

DataPlan plan_data(const DataOptions& o, const nn::NetSpec& net) {
    DataPlan plan = plan_sources(o, net);
    plan_mean(o, net, plan);
    return plan;
}

namespace {

data::Dataset open_part(const DataPlan::Part& p) {
    data::ImageOptions io;
    io.channels = p.channels;
    io.new_height = p.new_height;
    io.new_width = p.new_width;
    switch (p.kind) {
        case Kind::Lmdb: return data::open_lmdb(p.path, io);
        case Kind::ImageList: return data::open_image_list(p.path, p.root_folder, io);
        case Kind::ClassFolders: return data::open_class_folders(p.path, io);
        case Kind::Bundle: break;
    }
    throw std::logic_error("open_part: a bundle is loaded whole");
}

}  // namespace

data::TrainTest load_data(const DataPlan& plan, const DataOptions& o) {
    data::TrainTest tt;
    if (!plan.bundle_dir.empty()) tt = data::load_train_test(plan.bundle_dir, o.format);
    if (plan.train.kind != Kind::Bundle) tt.train = open_part(plan.train);
    if (plan.test.kind != Kind::Bundle) tt.test = open_part(plan.test);
    if (plan.streamed()) tt.format = "files";
    tt.notes = plan.notes;
    if (o.bad_image == "skip") tt.skipped = std::make_shared<data::SkipLog>();
    const data::Dataset &a = tt.train, &b = tt.test;
    if (a.channels != b.channels || a.height != b.height || a.width != b.width)
        throw data::DataError("the training set (" + a.source + ": " + std::to_string(a.channels) + " x " +
                              std::to_string(a.height) + " x " + std::to_string(a.width) + ") and the test set (" +
                              b.source + ": " + std::to_string(b.channels) + " x " + std::to_string(b.height) + " x " +
                              std::to_string(b.width) + ") differ in shape");
    if (a.num_classes > 0 && b.num_classes > 0)
        tt.train.num_classes = tt.test.num_classes = std::max(a.num_classes, b.num_classes);
    if (o.train_limit > 0) tt.train.truncate(o.train_limit);
    if (o.test_limit > 0) tt.test.truncate(o.test_limit);
    add_mean(plan, o, tt);
    return tt;
}

void add_mean(const DataPlan& plan, const DataOptions& o, data::TrainTest& tt) {
    const data::Dataset& a = tt.train;
    tt.compute_mean = plan.compute_mean && o.mean == "compute";
    if (!plan.mean_file.empty()) {
        const data::MeanImage m = data::read_mean_file(plan.mean_file);
        if (m.channels != a.channels || m.height != a.height || m.width != a.width)
            throw data::DataError(plan.mean_file + ": the mean image is " + std::to_string(m.channels) + " x " +
                                  std::to_string(m.height) + " x " + std::to_string(m.width) + ", the images " +
                                  std::to_string(a.channels) + " x " + std::to_string(a.height) + " x " +
                                  std::to_string(a.width) + " (" + a.source + ")");
        tt.mean = m.values;
        tt.notes.push_back("subtracting the mean image of " + plan.mean_file);
    }
}

data::Transform make_transform(const nn::TransformSpec& spec, const data::TrainTest& sets,
                               std::vector<float>& mean, std::vector<std::string>& notes) {
    const data::Dataset& train = sets.train;
    data::Transform t;
    t.scale = spec.scale;
    t.mirror = spec.mirror;
    t.crop = spec.crop_size;
    const bool by_option = spec.mean_values.empty() && (!sets.mean.empty() || sets.compute_mean);
    if (!spec.mean_file.empty() || by_option) {
        if (!sets.mean.empty()) {
            t.mean = sets.mean;
            return t;
        }
        if (mean.empty()) {
            mean = data::pixel_mean(train);
            notes.push_back("subtracting the per-pixel mean computed over the " + std::to_string(train.size()) +
                            " training images");
        }
        t.mean = mean;
    } else if (!spec.mean_values.empty()) {
        if (spec.mean_values.size() != 1 && static_cast<int>(spec.mean_values.size()) != train.channels)
            throw std::runtime_error("transform_param: " + std::to_string(spec.mean_values.size()) +
                                     " mean_value entries for " + std::to_string(train.channels) + " channels");
        t.mean = spec.mean_values;
    }
    return t;
}

}  // namespace rudra::session
