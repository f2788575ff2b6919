#include "data/image_decode.h"

#include <png.h>
#include <setjmp.h>
#include <cstdio>  // jpeglib.h needs FILE

#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "data/dataset.h"

namespace rudra::data {
namespace {

constexpr int kMaxSide = 1 << 15;  // larger images are refused: their buffers would be gigabytes

// n bytes of v, grown when it is smaller (never shrunk, never filled).
uint8_t* room(std::vector<uint8_t>& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

// libjpeg reports errors through a callback that must not return: it jumps back to the decode
// call with the message, which is then thrown from ordinary code (no C++ exception crosses C).
struct JpegError {
    jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

extern "C" void jpeg_fail(j_common_ptr c) {
    auto* e = reinterpret_cast<JpegError*>(c->err);
    (*c->err->format_message)(c, e->message);
    longjmp(e->jump, 1);
}
extern "C" void jpeg_quiet(j_common_ptr, int) {}

// Interleaved rows (RGB or grey) to planes (B, G, R or grey); each case its own loop, so that
// none tests the channels per pixel.
void to_planes(const uint8_t* rows, int h, int w, int in_channels, int channels, uint8_t* out) {
    const int64_t plane = static_cast<int64_t>(h) * w;
    uint8_t *p0 = out, *p1 = out + plane, *p2 = out + 2 * plane;
    if (channels == 1 && in_channels == 1) {
        std::memcpy(out, rows, static_cast<size_t>(plane));
    } else if (channels == 1) {
        for (int64_t i = 0; i < plane; ++i) {
            const uint8_t* px = rows + 3 * i;
            p0[i] = static_cast<uint8_t>((px[0] * 4899 + px[1] * 9617 + px[2] * 1868 + 8192) >> 14);
        }
    } else if (in_channels == 1) {
        for (int64_t i = 0; i < plane; ++i) p0[i] = p1[i] = p2[i] = rows[i];
    } else {
        for (int64_t i = 0; i < plane; ++i) {
            p0[i] = rows[3 * i + 2];
            p1[i] = rows[3 * i + 1];
            p2[i] = rows[3 * i];
        }
    }
}

// Decodes into `rows` (interleaved); false with err.message set on a libjpeg error. Everything
// that outlives a jump is owned by the caller, so that nothing here is live across setjmp.
bool jpeg_decode_rows(jpeg_decompress_struct& c, JpegError& err, const uint8_t* bytes, size_t size, int channels,
                      int want_h, int want_w, std::vector<uint8_t>& rows) {
    if (setjmp(err.jump)) return false;
    jpeg_mem_src(&c, bytes, static_cast<unsigned long>(size));
    jpeg_read_header(&c, TRUE);
    if (c.image_width > kMaxSide || c.image_height > kMaxSide) {
        std::snprintf(err.message, sizeof err.message, "%ux%u pixels, more than %d a side", c.image_width,
                      c.image_height, kMaxSide);
        return false;
    }
    if (channels == 0) channels = c.num_components == 1 ? 1 : 3;
    c.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    if (want_h > 0 && want_w > 0) {
        // The smallest DCT scale whose output still covers the size asked for.
        unsigned denom = 8;
        while (denom > 1 && (c.image_height / denom < static_cast<unsigned>(want_h) ||
                             c.image_width / denom < static_cast<unsigned>(want_w)))
            denom /= 2;
        c.scale_num = 1;
        c.scale_denom = denom;
    }
    jpeg_start_decompress(&c);
    const size_t stride = static_cast<size_t>(c.output_width) * c.output_components;
    uint8_t* const out = room(rows, stride * c.output_height);
    while (c.output_scanline < c.output_height) {
        JSAMPROW row = out + static_cast<size_t>(c.output_scanline) * stride;
        jpeg_read_scanlines(&c, &row, 1);
    }
    jpeg_finish_decompress(&c);
    return true;
}

ImageView decode_jpeg(const uint8_t* bytes, size_t size, int channels, int want_h, int want_w, const std::string& what,
                      DecodeBuffers& b) {
    jpeg_decompress_struct c{};
    JpegError err{};
    c.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = jpeg_fail;
    err.mgr.emit_message = jpeg_quiet;
    jpeg_create_decompress(&c);
    const bool ok = jpeg_decode_rows(c, err, bytes, size, channels, want_h, want_w, b.rows);
    const int h = static_cast<int>(c.output_height), w = static_cast<int>(c.output_width);
    const int in_channels = c.output_components;
    if (channels == 0) channels = in_channels == 1 ? 1 : 3;
    // A file cut short decodes with grey rows and a warning: refused, as a truncated file.
    const long warnings = err.mgr.num_warnings;
    jpeg_destroy_decompress(&c);
    if (!ok) throw DataError(what + ": corrupt or truncated JPEG: " + err.message);
    if (warnings > 0) throw DataError(what + ": corrupt or truncated JPEG (the decoder warned about its data)");
    uint8_t* planes = room(b.planes, static_cast<size_t>(channels) * h * w);
    to_planes(b.rows.data(), h, w, in_channels, channels, planes);
    return {channels, h, w, planes};
}

ImageView decode_png(const uint8_t* bytes, size_t size, int channels, const std::string& what, DecodeBuffers& b) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, bytes, size))
        throw DataError(what + ": corrupt PNG: " + png.message);
    if (png.width > kMaxSide || png.height > kMaxSide) {
        png_image_free(&png);
        throw DataError(what + ": PNG of " + std::to_string(png.width) + "x" + std::to_string(png.height) +
                        " pixels, more than " + std::to_string(kMaxSide) + " a side");
    }
    if (channels == 0) channels = (png.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
    png.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    uint8_t* rows = room(b.rows, PNG_IMAGE_SIZE(png));
    if (!png_image_finish_read(&png, nullptr, rows, 0, nullptr))
        throw DataError(what + ": corrupt or truncated PNG: " + png.message);
    const int h = static_cast<int>(png.height), w = static_cast<int>(png.width);
    uint8_t* planes = room(b.planes, static_cast<size_t>(channels) * h * w);
    to_planes(rows, h, w, channels, channels, planes);
    return {channels, h, w, planes};
}

}  // namespace

void resize_bilinear(const uint8_t* src, int channels, int h, int w, uint8_t* dst, int out_h, int out_w) {
    const float sy = static_cast<float>(h) / out_h, sx = static_cast<float>(w) / out_w;
    std::vector<int> x0(out_w), x1(out_w);
    std::vector<float> fx(out_w);
    for (int x = 0; x < out_w; ++x) {
        const float s = std::max(0.0f, (x + 0.5f) * sx - 0.5f);
        x0[x] = std::min(static_cast<int>(s), w - 1);
        x1[x] = std::min(x0[x] + 1, w - 1);
        fx[x] = s - x0[x];
    }
    for (int c = 0; c < channels; ++c) {
        const uint8_t* p = src + static_cast<int64_t>(c) * h * w;
        uint8_t* q = dst + static_cast<int64_t>(c) * out_h * out_w;
        for (int y = 0; y < out_h; ++y) {
            const float s = std::max(0.0f, (y + 0.5f) * sy - 0.5f);
            const int y0 = std::min(static_cast<int>(s), h - 1), y1 = std::min(y0 + 1, h - 1);
            const float fy = s - y0;
            const uint8_t* r0 = p + static_cast<int64_t>(y0) * w;
            const uint8_t* r1 = p + static_cast<int64_t>(y1) * w;
            for (int x = 0; x < out_w; ++x) {
                const float top = r0[x0[x]] + fx[x] * (r0[x1[x]] - r0[x0[x]]);
                const float bottom = r1[x0[x]] + fx[x] * (r1[x1[x]] - r1[x0[x]]);
                q[static_cast<int64_t>(y) * out_w + x] = static_cast<uint8_t>(std::lround(top + fy * (bottom - top)));
            }
        }
    }
}

ImageView decode_image(const uint8_t* bytes, size_t size, int channels, int resize_h, int resize_w,
                       const std::string& what, DecodeBuffers& buffers) {
    if (channels != 0 && channels != 1 && channels != 3)
        throw DataError(what + ": images are read with 1 or 3 channels");
    ImageView img;
    if (size >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff)
        img = decode_jpeg(bytes, size, channels, resize_h, resize_w, what, buffers);
    else if (size >= 8 && std::memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) == 0)
        img = decode_png(bytes, size, channels, what, buffers);
    else
        throw DataError(what + ": not a JPEG or PNG file" + (size == 0 ? " (empty)" : ""));
    if (resize_h > 0 && resize_w > 0 && (img.height != resize_h || img.width != resize_w)) {
        uint8_t* out = room(buffers.resized, static_cast<size_t>(img.channels) * resize_h * resize_w);
        resize_bilinear(img.planes, img.channels, img.height, img.width, out, resize_h, resize_w);
        return {img.channels, resize_h, resize_w, out};
    }
    return img;
}

Image decode_image(const uint8_t* bytes, size_t size, int channels, int resize_h, int resize_w,
                   const std::string& what) {
    DecodeBuffers buffers;
    const ImageView v = decode_image(bytes, size, channels, resize_h, resize_w, what, buffers);
    Image img;
    img.channels = v.channels;
    img.height = v.height;
    img.width = v.width;
    img.planes.assign(v.planes, v.planes + static_cast<size_t>(v.channels) * v.height * v.width);
    return img;
}

namespace {

// Planes (B, G, R or grey) to interleaved rows (R, G, B or grey).
std::vector<uint8_t> to_rows(const Image& img) {
    const int64_t plane = static_cast<int64_t>(img.height) * img.width;
    std::vector<uint8_t> rows(static_cast<size_t>(plane * img.channels));
    for (int64_t i = 0; i < plane; ++i)
        for (int c = 0; c < img.channels; ++c)
            rows[i * img.channels + c] = img.planes[(img.channels == 3 ? 2 - c : c) * plane + i];
    return rows;
}

}  // namespace

namespace {

struct JpegOut {
    unsigned char* buf = nullptr;
    unsigned long len = 0;
    ~JpegOut() { std::free(buf); }
};

bool jpeg_encode_rows(jpeg_compress_struct& c, JpegError& err, const Image& img, const std::vector<uint8_t>& rows,
                      int quality, JpegOut& out) {
    if (setjmp(err.jump)) return false;
    jpeg_mem_dest(&c, &out.buf, &out.len);
    c.image_width = static_cast<JDIMENSION>(img.width);
    c.image_height = static_cast<JDIMENSION>(img.height);
    c.input_components = img.channels;
    c.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    const size_t stride = static_cast<size_t>(img.width) * img.channels;
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = const_cast<uint8_t*>(rows.data()) + static_cast<size_t>(c.next_scanline) * stride;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    return true;
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const Image& img, int quality) {
    jpeg_compress_struct c{};
    JpegError err{};
    c.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = jpeg_fail;
    jpeg_create_compress(&c);
    const std::vector<uint8_t> rows = to_rows(img);
    JpegOut out;
    const bool ok = jpeg_encode_rows(c, err, img, rows, quality, out);
    jpeg_destroy_compress(&c);
    if (!ok) throw DataError(std::string("JPEG encoding failed: ") + err.message);
    return std::vector<uint8_t>(out.buf, out.buf + out.len);
}

std::vector<uint8_t> encode_png(const Image& img) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(img.width);
    png.height = static_cast<png_uint_32>(img.height);
    png.format = img.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    const std::vector<uint8_t> rows = to_rows(img);
    png_alloc_size_t len = 0;
    if (!png_image_write_to_memory(&png, nullptr, &len, 0, rows.data(), 0, nullptr))
        throw DataError(std::string("PNG encoding failed: ") + png.message);
    std::vector<uint8_t> out(len);
    if (!png_image_write_to_memory(&png, out.data(), &len, 0, rows.data(), 0, nullptr))
        throw DataError(std::string("PNG encoding failed: ") + png.message);
    out.resize(len);
    return out;
}

}  // namespace rudra::data
