// One stored sample (a Datum's bytes, an image file's bytes) into a set's shape: what the
// LMDB, list and folder readers share.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/sample_reader.h"

namespace rudra::data {

struct SetShape {
    int channels = 0, height = 0, width = 0;
    bool resize = false;  // images of another size are resized (new_height/new_width given)
};

// A whole file's bytes (an image file); errors begin with `what`.
std::vector<uint8_t> read_file(const std::string& path, const std::string& what);

// An encoded image file into `out` [C, H, W] of `shape`, decoded in `buffers`; another size is
// an error naming `what` unless shape.resize.
void decode_to_shape(const uint8_t* bytes, size_t size, const SetShape& shape, uint8_t* out, const std::string& what,
                     DecodeBuffers& buffers);

// The shape a set takes from its first image (encoded) when no new_height/new_width is given.
SetShape shape_of_first(const uint8_t* bytes, size_t size, const ImageOptions& o, const std::string& what);

}  // namespace rudra::data
