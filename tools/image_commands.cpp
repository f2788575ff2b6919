// `rudra convert` (Caffe's convert_imageset) and `rudra mean` (compute_image_mean): the inputs
// people bring, made into what the Data layer and its transform_param read.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "data/batch_stream.h"

#include "base/clock.h"
#include "data/datum.h"
#include "data/image_decode.h"
#include "data/lmdb_writer.h"
#include "data/mean_file.h"
#include "data/sample_reader.h"
#include "data/stored_image.h"
#include "nn/atomic_file.h"
#include "tools/commands.h"

namespace rudra::tools {
namespace {

namespace fs = std::filesystem;

bool is_png_name(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext == ".png";
}

// Any set rudra reads, opened for one pass: an LMDB, a folder of class folders, a folder of
// IDX or CIFAR-10 files (its training part), or an ImageData list.
data::Dataset open_any(const std::string& input, const std::string& root, const data::ImageOptions& io) {
    if (data::is_lmdb(input)) return data::open_lmdb(input, io);
    if (fs::is_directory(input)) {
        if (data::is_class_folder_set(input)) return data::open_class_folders(input, io);
        return data::load_train_test(input).train;
    }
    return data::open_image_list(input, root, io);
}

data::ImageOptions image_options(bool gray, int new_height, int new_width) {
    if ((new_height > 0) != (new_width > 0)) throw std::runtime_error("give --resize-height and --resize-width together");
    data::ImageOptions io;
    io.channels = gray ? 1 : 0;
    io.new_height = new_height;
    io.new_width = new_width;
    return io;
}

}  // namespace

int run_convert(const ConvertOptions& o) {
    image_options(o.gray, o.new_height, o.new_width);  // checks the resize
    struct File {
        std::string path, name;
        int label;
        int64_t line;
    };
    std::vector<File> files;
    const std::string base = fs::is_directory(o.input) ? o.input + "/" : o.root;
    const data::OnFile add = [&](const data::LabelledFile& f) { files.push_back({base + f.name, f.name, f.label, f.line}); };
    if (fs::is_directory(o.input)) data::find_class_folder_files(o.input, add);
    else data::read_image_list(o.input, o.root, add);
    if (files.empty()) throw data::DataError(o.input + ": no images");
    if (o.shuffle) std::shuffle(files.begin(), files.end(), std::mt19937_64(o.seed));
    if (fs::exists(o.output))
        throw std::runtime_error(o.output + ": exists already; remove it or name another output folder");
    // Written under another name and renamed when whole: a failed or killed conversion leaves no
    // LMDB that looks finished.
    const std::string partial = o.output + ".partial";
    if (fs::exists(partial)) fs::remove_all(partial);
    const bool resize = o.new_height > 0 && o.new_width > 0;
    const int channels = o.gray ? 1 : 3;
    int64_t bytes = 0;
    try {
        data::LmdbWriter db(partial);
        for (size_t i = 0; i < files.size(); ++i) {
            const File& f = files[i];
            const std::string what = f.line ? o.input + ":" + std::to_string(f.line) + ": " + f.path : f.path;
            const std::vector<uint8_t> file = data::read_file(f.path, what);
            std::vector<uint8_t> value;
            if (o.encoded && !resize && !o.gray) {
                data::decode_image(file.data(), file.size(), 0, 0, 0, what);  // a corrupt file is refused now
                value = data::encode_datum(0, 0, 0, file.data(), file.size(), f.label, true);
            } else {
                const data::Image img =
                    data::decode_image(file.data(), file.size(), channels, o.new_height, o.new_width, what);
                if (o.encoded) {
                    const std::vector<uint8_t> enc = is_png_name(f.path) ? data::encode_png(img) : data::encode_jpeg(img, 95);
                    value = data::encode_datum(0, 0, 0, enc.data(), enc.size(), f.label, true);
                } else {
                    value = data::encode_datum(img.channels, img.height, img.width, img.planes.data(), img.planes.size(),
                                               f.label, false);
                }
            }
            char key[24];
            std::snprintf(key, sizeof key, "%08zu_", i);
            db.put(key + f.name, value);
            bytes += static_cast<int64_t>(value.size());
            if ((i + 1) % 10000 == 0) std::printf("convert: %zu of %zu images\n", i + 1, files.size());
        }
        db.finish();
        fs::rename(partial, o.output);
    } catch (...) {
        std::error_code ec;
        fs::remove_all(partial, ec);
        throw;
    }
    std::printf("convert: %zu images (%s%s) into %s, %.1f MB of records\n", files.size(),
                o.encoded ? "encoded" : "raw", resize ? (", resized to " + std::to_string(o.new_width) + "x" +
                                                         std::to_string(o.new_height)).c_str() : "",
                o.output.c_str(), static_cast<double>(bytes) / 1e6);
    return 0;
}

int run_mean(const MeanOptions& o) {
    const data::Dataset d = open_any(o.input, o.root, image_options(o.gray, o.new_height, o.new_width));
    nn::check_can_write(o.output, "the mean file");
    const int64_t per = d.sample_bytes();
    std::vector<double> sum(static_cast<size_t>(per), 0.0);
    data::ReadScratch scratch;
    for (int64_t i = 0; i < d.size(); ++i) {
        const uint8_t* px = nullptr;
        d.read(i, scratch, px);
        for (int64_t p = 0; p < per; ++p) sum[p] += px[p];
        if ((i + 1) % 100000 == 0) std::printf("mean: %lld of %lld images\n", static_cast<long long>(i + 1),
                                               static_cast<long long>(d.size()));
    }
    data::MeanImage m;
    m.channels = d.channels;
    m.height = d.height;
    m.width = d.width;
    m.values.resize(static_cast<size_t>(per));
    for (int64_t p = 0; p < per; ++p) m.values[p] = static_cast<float>(sum[p] / static_cast<double>(d.size()));
    const std::vector<uint8_t> blob = data::encode_mean_blob(m);
    nn::write_file_atomically(o.output, std::string(blob.begin(), blob.end()));
    std::printf("mean: %lld images of %d x %d x %d from %s into %s; per channel:", static_cast<long long>(d.size()),
                d.channels, d.height, d.width, o.input.c_str(), o.output.c_str());
    const int64_t plane = static_cast<int64_t>(d.height) * d.width;
    for (int c = 0; c < d.channels; ++c) {
        double s = 0;
        for (int64_t p = 0; p < plane; ++p) s += m.values[c * plane + p];
        std::printf(" %.3f", s / static_cast<double>(plane));
    }
    std::printf("\n");
    return 0;
}

int run_input(const InputOptions& o) {
    const data::Dataset d = open_any(o.input, o.root, image_options(o.gray, o.new_height, o.new_width));
    data::Transform t;
    t.crop = o.crop;
    t.mirror = o.mirror;
    t.scale = o.scale;
    t.mean = o.mean_values;
    if (o.crop > d.height || o.crop > d.width)
        throw std::runtime_error("--crop " + std::to_string(o.crop) + " exceeds the images' " + std::to_string(d.width) +
                                 "x" + std::to_string(d.height));
    data::Prefetcher stream(d, t, o.batch, 1, 0, {}, o.decode_threads);
    stream.next();  // the first batch: started before the clock
    const auto start = std::chrono::steady_clock::now();
    double checksum = 0;
    for (int b = 0; b < o.batches; ++b) checksum += stream.next().data[0];
    const double s = seconds_since(start);
    const double ips = o.batches * static_cast<double>(o.batch) / s;
    std::printf("input: %d batches of %d from %s (%d x %d x %d, crop %d%s): %.1f images/s with %d decode thread(s), "
                "%.1f per thread (checksum %.3g)\n",
                o.batches, o.batch, o.input.c_str(), d.channels, d.height, d.width, o.crop, o.mirror ? ", mirror" : "",
                ips, o.decode_threads, ips / o.decode_threads, checksum);
    // Private memory (what grows with a set held in memory) apart from mapped file pages (an
    // LMDB's, which the kernel may drop and the node's processes share).
    std::ifstream status("/proc/self/status");
    std::string line, memory;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0 || line.rfind("RssAnon:", 0) == 0 || line.rfind("RssFile:", 0) == 0)
            memory += (memory.empty() ? "" : ", ") + line.substr(0, line.find(':')) + " " +
                      std::to_string(std::stoll(line.substr(line.find(':') + 1)) / 1024) + " MiB";
    std::printf("input: memory: %s\n", memory.c_str());
    return 0;
}

}  // namespace rudra::tools
