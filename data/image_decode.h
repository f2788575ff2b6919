// JPEG (libjpeg-turbo) and PNG (libpng) files to pixels, in the layout Caffe's readers give
// (OpenCV's): planes [C, H, W], colour as B, G, R; grey as one plane. A JPEG that is at least
// twice as large as the size asked for is decoded at 1/2, 1/4 or 1/8 scale in the DCT domain
// (libjpeg-turbo's scaling), then resized bilinearly to the exact size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rudra::data {

struct Image {
    int channels = 0, height = 0, width = 0;
    std::vector<uint8_t> planes;  // [channels, height, width]
};

// Buffers a thread keeps from one image to the next. An image's buffers are larger than malloc's
// mmap threshold: allocated afresh for each image, their pages fault in again every time, which
// can cost more than the decoding itself.
struct DecodeBuffers {
    std::vector<uint8_t> rows;     // the decoder's interleaved rows
    std::vector<uint8_t> planes;   // its planes
    std::vector<uint8_t> resized;  // the planes resized
};

// A decoded image in a DecodeBuffers: valid until the buffers are used again.
struct ImageView {
    int channels = 0, height = 0, width = 0;
    const uint8_t* planes = nullptr;  // [channels, height, width]
};

// Decodes an encoded image (JPEG or PNG, told by its first bytes) into `channels` (1 or 3;
// 0: as stored, grey as 1 and colour as 3) planes. resize_h, resize_w > 0: the result has that size (bilinear, as OpenCV's INTER_LINEAR
// with half-pixel centres). Throws DataError "<what>: ..." on a file that is neither, or is
// corrupt or truncated.
Image decode_image(const uint8_t* bytes, size_t size, int channels, int resize_h, int resize_w,
                   const std::string& what);
// The same into `buffers`, which it grows and never shrinks.
ImageView decode_image(const uint8_t* bytes, size_t size, int channels, int resize_h, int resize_w,
                       const std::string& what, DecodeBuffers& buffers);

// Bilinear resize of planes [C, h, w] to [C, out_h, out_w].
void resize_bilinear(const uint8_t* src, int channels, int h, int w, uint8_t* dst, int out_h, int out_w);

// A JPEG (quality 1-100) or PNG file of planes [C, H, W] (B, G, R or grey): for `rudra convert`
// and the tests' independent writers.
std::vector<uint8_t> encode_jpeg(const Image& img, int quality);
std::vector<uint8_t> encode_png(const Image& img);

}  // namespace rudra::data
