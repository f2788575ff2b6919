// Data sets read sample by sample from their files instead of held in memory: Caffe's LMDBs of
// Datums, Caffe ImageData list files ("path label" lines) and folders with one subfolder per
// class. Opening one reads only its index (LMDB keys, list lines, file names); each sample is
// read and decoded when a batch asks for it, so a reader's memory does not grow with the
// images' bytes. An LMDB is memory-mapped read-only: the ranks of a node share its pages
// through the page cache.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace rudra::data {

// How stored images become samples: every sample of a set has one shape.
struct ImageOptions {
    int channels = 0;                   // 3 (B, G, R), 1 (grey) or 0: as the first image is stored
    int new_height = 0, new_width = 0;  // both > 0: every image resized to this
};

class SampleReader {
public:
    virtual ~SampleReader() = default;
    // Sample i's pixels [C, H, W] in the set's shape into `out`, decoded in the calling
    // thread's `buffers`; returns its label. Safe to call from several threads at once, each
    // with buffers of its own. Throws DataError naming the file and record.
    virtual int read(int64_t i, uint8_t* out, DecodeBuffers& buffers) const = 0;
    // Labels at or above this are refused when read, naming the record (0: not checked): a set
    // whose labels are only known record by record (an LMDB) is checked as it is read.
    void limit_labels(int classes) const { label_limit_ = classes; }

protected:
    int checked_label(int64_t label, const std::string& where) const;

private:
    mutable std::atomic<int> label_limit_{0};
};

// An image file and its label, as a list file or a class folder names it.
struct LabelledFile {
    const std::string& name;  // as the list or the class folder gives it (e.g. "cat/0001.jpg")
    int label = 0;
    int64_t line = 0;  // the list file's line (0: a class folder)
};
using OnFile = std::function<void(const LabelledFile&)>;
// The entries of a Caffe ImageData list in order, each file checked to exist (at
// root_folder + name: Caffe joins them as written). Throws DataError naming the list and line.
void read_image_list(const std::string& list_file, const std::string& root_folder, const OnFile& on_file);
// The image files of a folder of class folders (at dir + "/" + name), classes and files in name
// order; returns the number of class folders.
int find_class_folder_files(const std::string& dir, const OnFile& on_file);

// An LMDB of Caffe Datums (a folder holding data.mdb, or the data file itself), raw or encoded.
Dataset open_lmdb(const std::string& path, const ImageOptions& o);
// A Caffe ImageData list: lines "path label", paths relative to root_folder ("" : as written).
Dataset open_image_list(const std::string& list_file, const std::string& root_folder, const ImageOptions& o);
// A folder with one subfolder per class, classes numbered in the order of their names; every
// .jpg, .jpeg, .png file (any case) in a class folder is a sample.
Dataset open_class_folders(const std::string& dir, const ImageOptions& o);
// True when `dir` holds subfolders with image files and nothing else of note.
bool is_class_folder_set(const std::string& dir);
// True when `path` is an LMDB (a folder holding data.mdb, or an LMDB data file).
bool is_lmdb(const std::string& path);

}  // namespace rudra::data
