// The data side of a session: find and open the data sets as the net's Data layers and the
// command line name them, and the input transform of a Data layer's transform_param. Only
// session/ and tools/ know both data/ and nn/.
//
// Where the sets come from, in this order:
//   1. --data DIR holding IDX files or CIFAR-10 binary batches: those (the layers' sources are
//      not read; a note says so);
//   2. --data DIR holding train/ and val/ (or test/), each a folder of class folders (the layout
//      of ImageNet's and torchvision's ImageFolder): those;
//   3. each phase's Data or ImageData layer's source, as Caffe resolves it (relative to the
//      working directory), or with --data DIR under DIR (DIR/source, else DIR/its last part):
//      an LMDB of Datums, an ImageData list, a folder of class folders, or a folder of IDX or
//      CIFAR-10 files;
//   4. no source named and no --data: Debian's Fashion-MNIST (kDefaultDataDir).
// A source that is named and cannot be found or read is an error naming it: never a silent
// fall-back to another set.
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/transform.h"
#include "nn/net_spec.h"

namespace rudra::session {

inline constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

struct DataOptions {
    std::string dir;  // --data ("": the net's sources)
    std::string format = "auto";
    int64_t train_limit = 0, test_limit = 0;  // 0: all samples
    int decode_threads = 1;                   // threads that read and decode a training batch
    std::string mean;  // --mean: a mean file in place of the layers' mean_file, or "compute"
    std::string bad_image = "stop";  // --bad-image: "stop" at a record that cannot be read, or "skip" it
};

// Where each phase's set is read from.
struct DataPlan {
    enum class Kind { Bundle, Lmdb, ImageList, ClassFolders };
    struct Part {
        Kind kind = Kind::Bundle;
        std::string path;         // the file or folder
        std::string root_folder;  // ImageList
        int channels = 0;         // 0: as stored (1 or 3)
        int new_height = 0, new_width = 0;
    };
    Part train, test;
    std::string bundle_dir;  // Kind::Bundle: the folder of IDX or CIFAR-10 files
    // The mean image the Data layers subtract: a Caffe mean file, or computed over the training
    // set (compute_mean), or none.
    std::string mean_file;
    bool compute_mean = false;
    std::vector<std::string> notes;
    // The sets are read sample by sample from their files (not loaded into memory).
    bool streamed() const { return train.kind != Kind::Bundle || test.kind != Kind::Bundle; }
};

DataPlan plan_data(const DataOptions& o, const nn::NetSpec& net);
data::TrainTest load_data(const DataPlan& plan, const DataOptions& o);
// The mean image the plan names, read into tt.mean (checked against the images' shape), and
// tt.compute_mean; load_data calls it (a set shared between a node's ranks has it added after).
void add_mean(const DataPlan& plan, const DataOptions& o, data::TrainTest& tt);
inline data::TrainTest load_data(const DataOptions& o, const nn::NetSpec& net) { return load_data(plan_data(o, net), o); }

// The data/ transform for a Data layer's transform_param. A mean_file subtracts the mean image
// load_data read from it (sets.mean), or, for IDX and CIFAR-10 folders that come without one,
// the per-pixel mean computed over the training set; `mean` holds it once computed, so that
// the TRAIN and TEST transforms share one pass.
data::Transform make_transform(const nn::TransformSpec& spec, const data::TrainTest& sets,
                               std::vector<float>& mean, std::vector<std::string>& notes);

}  // namespace rudra::session
