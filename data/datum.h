// Caffe's Datum (caffe.proto), the record of an LMDB that convert_imageset writes:
//   channels = 1, height = 2, width = 3 (int32), data = 4 (bytes), label = 5 (int32),
//   float_data = 6 (repeated float), encoded = 7 (bool: `data` holds a JPEG or PNG file).
// Decoded by a small checked protobuf reader: only these fields, any order, unknown fields
// skipped as protobuf says; every length is checked against the record.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rudra::data {

struct Datum {
    int64_t channels = 0, height = 0, width = 0;
    const uint8_t* data = nullptr;  // into the record's bytes
    size_t data_size = 0;
    std::vector<float> float_data;
    int64_t label = 0;
    bool encoded = false;
};

// Throws DataError "<what>: ..." on bytes that are not a Datum.
Datum parse_datum(const uint8_t* bytes, size_t size, const std::string& what);

// A Datum's bytes (raw pixels or an encoded file), as Caffe writes them: for tests and
// `rudra convert`.
std::vector<uint8_t> encode_datum(int channels, int height, int width, const uint8_t* data, size_t data_size,
                                  int label, bool encoded);

}  // namespace rudra::data
