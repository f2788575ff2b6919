#include "data/stored_image.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "data/image_decode.h"
#include "data/sample_reader.h"

namespace rudra::data {

int SampleReader::checked_label(int64_t label, const std::string& where) const {
    const int limit = label_limit_.load(std::memory_order_relaxed);
    if (label < 0 || (limit > 0 && label >= limit))
        throw DataError(where + ": label " + std::to_string(label) +
                        (limit > 0 ? " is not one of the net's " + std::to_string(limit) + " classes" : " is negative"));
    return static_cast<int>(label);
}

std::vector<uint8_t> read_file(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(what + ": cannot open " + path);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(what + ": error reading " + path);
    return b;
}

void decode_to_shape(const uint8_t* bytes, size_t size, const SetShape& shape, uint8_t* out, const std::string& what,
                     DecodeBuffers& buffers) {
    const ImageView img = decode_image(bytes, size, shape.channels, shape.resize ? shape.height : 0,
                                       shape.resize ? shape.width : 0, what, buffers);
    if (img.height != shape.height || img.width != shape.width)
        throw DataError(what + ": a " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                        " image in a set of " + std::to_string(shape.width) + "x" + std::to_string(shape.height) +
                        " (the first image's size): give new_height and new_width to resize them all");
    std::memcpy(out, img.planes, static_cast<size_t>(img.channels) * img.height * img.width);
}

SetShape shape_of_first(const uint8_t* bytes, size_t size, const ImageOptions& o, const std::string& what) {
    SetShape s;
    const bool resize = o.new_height > 0 && o.new_width > 0;
    const Image img = decode_image(bytes, size, o.channels, o.new_height, o.new_width, what);
    s.channels = img.channels;
    s.height = img.height;
    s.width = img.width;
    s.resize = resize;
    return s;
}

}  // namespace rudra::data
