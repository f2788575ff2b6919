// Caffe's mean files: a BlobProto (caffe.proto) in binary protobuf, as compute_image_mean
// writes it: num = 1, channels = 2, height = 3, width = 4 (int32), or shape = 7 (BlobShape, dim
// = 1, int64); data = 5 (float, packed or not) or double_data = 8.
#pragma once
#include <string>
#include <vector>

namespace rudra::data {

struct MeanImage {
    int channels = 0, height = 0, width = 0;
    std::vector<float> values;  // [channels, height, width]
};

// Throws DataError naming the file on one that cannot be read or is not a BlobProto of one
// image.
MeanImage read_mean_file(const std::string& path);
MeanImage parse_mean_blob(const uint8_t* bytes, size_t size, const std::string& what);
// The BlobProto bytes Caffe writes (num 1, channels, height, width, packed data).
std::vector<uint8_t> encode_mean_blob(const MeanImage& m);

}  // namespace rudra::data
