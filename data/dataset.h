// An image classification data set held in memory as bytes: pixels [N, C, H, W] and labels [N].
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/image_decode.h"

namespace rudra::data {

// A problem with a data file; the message names the file and what is wrong.
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class SampleReader;
class SkipLog;

// What a thread reading samples keeps from one to the next, so that reading one allocates
// nothing: the sample's bytes and the decoder's buffers.
struct ReadScratch {
    std::vector<uint8_t> sample;
    DecodeBuffers decode;
};

struct Dataset {
    std::string source;        // file(s) it came from, for messages
    std::string label_source;  // the file the labels came from (IDX keeps them apart)
    int channels = 0, height = 0, width = 0;
    int num_classes = 0;
    std::vector<uint8_t> pixels;  // the pixels, unless `mapped` points at them
    std::vector<uint8_t> labels;
    // Pixels in memory shared with other processes (the one copy of a node's training set that
    // its ranks map), kept alive by `mapping`; when set, `pixels` is empty.
    const uint8_t* mapped = nullptr;
    std::shared_ptr<const void> mapping;

    // A set read from its files sample by sample (data/sample_reader.h): `pixels` and `labels`
    // stay empty, `streamed` counts the samples.
    std::shared_ptr<const SampleReader> reader;
    int64_t streamed = 0;

    int64_t size() const { return reader ? streamed : static_cast<int64_t>(labels.size()); }
    bool is_streamed() const { return reader != nullptr; }
    // Sample i: its label, and `pixels` pointing at its bytes [C, H, W], which are in memory or
    // read into `scratch` (valid until scratch is used again). Throws DataError naming the record.
    int read(int64_t i, ReadScratch& scratch, const uint8_t*& pixels) const;
    int64_t sample_bytes() const { return static_cast<int64_t>(channels) * height * width; }
    const uint8_t* pixel_data() const { return mapped ? mapped : pixels.data(); }
    // In-memory sets only.
    const uint8_t* sample(int64_t i) const { return pixel_data() + i * sample_bytes(); }
    // Lets the pixels go (owned or mapped); the labels stay.
    void release_pixels();
    // Keeps the first n samples (tests and quick runs).
    void truncate(int64_t n);
};

// IDX (MNIST, Fashion-MNIST): an idx3 image file and an idx1 label file, gzip or plain.
Dataset read_idx(const std::string& images_path, const std::string& labels_path);
// A whole file, gunzipped when it is gzip (zlib reads plain files as they are). Throws DataError
// naming the file (missing, unreadable, corrupt or truncated gzip data).
std::vector<uint8_t> read_maybe_gzip(const std::string& path);
// The same from the files' (gunzipped) bytes; the paths name them in errors.
Dataset parse_idx(const std::vector<uint8_t>& images, const std::string& images_path,
                  const std::vector<uint8_t>& labels, const std::string& labels_path);
// CIFAR-10 binary batches: records of 1 label byte + 3072 pixel bytes (3 x 32 x 32).
Dataset read_cifar10(const std::vector<std::string>& batch_files);
// Adds one batch file's (gunzipped) bytes to `d`; `path` names them in errors.
void append_cifar10(Dataset& d, const std::vector<uint8_t>& bytes, const std::string& path);

struct TrainTest {
    Dataset train, test;
    std::string format;  // "idx", "cifar10" or "files" (read sample by sample)
    std::vector<std::string> notes;  // how the sets were found, for the run's notes
    std::vector<float> mean;         // the mean image of a mean file, [C, H, W] (empty: none read)
    bool compute_mean = false;       // subtract the training set's per-pixel mean (--mean compute)
    // --bad-image skip: records that cannot be read are skipped and recorded here (null: a bad
    // record stops the run).
    std::shared_ptr<SkipLog> skipped;
};

// A loaded data set as one byte string and back, so that one process can read and decompress
// it and hand it to others (the ranks of a node). unpack_train_test throws DataError on bytes
// that pack_train_test did not write.
std::vector<uint8_t> pack_train_test(const TrainTest& t);
TrainTest unpack_train_test(const std::vector<uint8_t>& bytes);
// The same, without copying the training pixels: they stay in `bytes` (memory shared with other
// processes), which `keep` keeps alive as long as the training set is used.
TrainTest view_train_test(const uint8_t* bytes, size_t size, std::shared_ptr<const void> keep);

// Finds the data set in `dir`: IDX files (train-images-idx3-ubyte[.gz], ...) or CIFAR-10
// (data_batch_N.bin, test_batch.bin). format: "auto", "idx" or "cifar10".
TrainTest load_train_test(const std::string& dir, const std::string& format = "auto");

}  // namespace rudra::data
