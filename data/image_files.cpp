// Image files named by a Caffe ImageData list, or found in class folders (data/sample_reader.h).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "data/sample_reader.h"
#include "data/stored_image.h"

namespace rudra::data {
namespace {

namespace fs = std::filesystem;

// Files and their labels; the file names share one string under one base path, so that a
// million of them cost their own characters and an offset each.
class FileListReader final : public SampleReader {
public:
    FileListReader(std::string source, std::string base) : source_(std::move(source)), base_(std::move(base)) {}
    void add(const LabelledFile& f) {
        at_.push_back(names_.size());
        names_ += f.name;
        labels_.push_back(f.label);
        lines_.push_back(f.line);
    }
    void finish() {
        at_.push_back(names_.size());
        at_.shrink_to_fit();
        names_.shrink_to_fit();
        labels_.shrink_to_fit();
        lines_.shrink_to_fit();
    }
    int64_t count() const { return static_cast<int64_t>(labels_.size()); }
    std::string path(int64_t i) const { return base_ + names_.substr(at_[i], at_[i + 1] - at_[i]); }
    void set_shape(const SetShape& s) { shape_ = s; }
    const SetShape& shape() const { return shape_; }
    int max_label() const { return labels_.empty() ? -1 : *std::max_element(labels_.begin(), labels_.end()); }

    std::string where(int64_t i) const {
        return lines_[i] > 0 ? source_ + ":" + std::to_string(lines_[i]) + ": " + path(i) : path(i);
    }
    int read(int64_t i, uint8_t* out, DecodeBuffers& buffers) const override {
        const std::string what = where(i);
        const std::vector<uint8_t> bytes = read_file(path(i), what);
        decode_to_shape(bytes.data(), bytes.size(), shape_, out, what, buffers);
        return checked_label(labels_[i], what);
    }

private:
    std::string source_, base_;
    SetShape shape_;
    std::string names_;
    std::vector<size_t> at_;
    std::vector<int32_t> labels_;
    std::vector<int32_t> lines_;  // the list file's line of each sample (0: a class folder)
};

bool is_image_name(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

Dataset finish_set(std::shared_ptr<FileListReader> reader, const std::string& source, const ImageOptions& o) {
    reader->finish();
    if (reader->count() == 0) throw DataError(source + ": no images");
    // The set's shape from its first image that can be read: a bad one is reported when it is
    // drawn (and skipped there under --bad-image skip), not here.
    for (int64_t i = 0;; ++i) {
        try {
            const std::string what = reader->where(i);
            const std::vector<uint8_t> first = read_file(reader->path(i), what);
            reader->set_shape(shape_of_first(first.data(), first.size(), o, what));
            break;
        } catch (const DataError&) {
            if (i + 1 >= std::min<int64_t>(reader->count(), 100)) throw;
        }
    }
    Dataset d;
    d.source = d.label_source = source;
    d.channels = reader->shape().channels;
    d.height = reader->shape().height;
    d.width = reader->shape().width;
    d.num_classes = reader->max_label() + 1;
    d.streamed = reader->count();
    d.reader = std::move(reader);
    return d;
}

}  // namespace

void read_image_list(const std::string& list_file, const std::string& root_folder, const OnFile& on_file) {
    std::ifstream in(list_file);
    if (!in) throw DataError(list_file + ": cannot open the image list");
    std::string line, name;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        const std::string at = list_file + ":" + std::to_string(n) + ": ";
        if (n > INT32_MAX) throw DataError(at + "more than 2^31 lines");
        // Caffe's rule: the label follows the last space; the path may hold spaces.
        const size_t space = line.find_last_of(" \t");
        const size_t end = space == std::string::npos ? space : line.find_last_not_of(" \t", space);
        if (end == std::string::npos) throw DataError(at + "expected 'path label', got '" + line + "'");
        const std::string label_text = line.substr(space + 1);
        name = line.substr(0, end + 1);
        long long label = -1;
        size_t used = 0;
        try {
            label = std::stoll(label_text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != label_text.size() || label < 0 || label > INT32_MAX)
            throw DataError(at + "label '" + label_text + "' is not a class number (0 or more)");
        if (!fs::is_regular_file(root_folder + name)) throw DataError(at + "no such image file: " + root_folder + name);
        on_file(LabelledFile{name, static_cast<int>(label), n});
    }
    if (in.bad()) throw DataError(list_file + ": error reading the image list");
}

int find_class_folder_files(const std::string& dir, const OnFile& on_file) {
    if (!fs::is_directory(dir)) throw DataError(dir + ": no such folder of class folders");
    std::vector<fs::path> folders;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory()) folders.push_back(e.path());
    std::sort(folders.begin(), folders.end());
    if (folders.empty()) throw DataError(dir + ": no class folders (one subfolder of images per class)");
    std::string name;
    for (size_t c = 0; c < folders.size(); ++c) {
        std::vector<std::string> files;  // one class's, sorted
        for (const auto& f : fs::directory_iterator(folders[c]))
            if (f.is_regular_file() && is_image_name(f.path())) files.push_back(f.path().filename().string());
        std::sort(files.begin(), files.end());
        for (const std::string& f : files) {
            name = folders[c].filename().string() + "/" + f;
            on_file(LabelledFile{name, static_cast<int>(c), 0});
        }
    }
    return static_cast<int>(folders.size());
}

Dataset open_image_list(const std::string& list_file, const std::string& root_folder, const ImageOptions& o) {
    auto reader = std::make_shared<FileListReader>(list_file, root_folder);
    read_image_list(list_file, root_folder, [&](const LabelledFile& f) { reader->add(f); });
    return finish_set(std::move(reader), list_file, o);
}

bool is_class_folder_set(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return false;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_directory()) continue;
        for (const auto& f : fs::directory_iterator(e.path(), ec))
            if (f.is_regular_file() && is_image_name(f.path())) return true;
    }
    return false;
}

Dataset open_class_folders(const std::string& dir, const ImageOptions& o) {
    auto reader = std::make_shared<FileListReader>(dir, dir + "/");
    const int classes = find_class_folder_files(dir, [&](const LabelledFile& f) { reader->add(f); });
    Dataset d = finish_set(std::move(reader), dir, o);
    d.num_classes = classes;
    return d;
}

}  // namespace rudra::data
