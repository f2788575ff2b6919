#include "data/datum.h"

#include <cstring>

#include "data/dataset.h"
#include "data/proto_wire.h"

namespace rudra::data {
namespace {

int64_t as_int32(ProtoWire& r, uint64_t v, const char* field) {
    // int32 fields: negatives are sign-extended to 10 bytes.
    const auto s = static_cast<int64_t>(v);
    if (s < INT32_MIN || s > INT32_MAX) r.fail(std::string(field) + " " + std::to_string(s) + " is not an int32");
    return s;
}

}  // namespace

Datum parse_datum(const uint8_t* bytes, size_t size, const std::string& what) {
    const std::string prefix = what + ": not a Caffe Datum";
    ProtoWire r(bytes, size, prefix);
    Datum d;
    while (!r.done()) {
        const uint64_t key = r.varint();
        const int wire = static_cast<int>(key & 7);
        const uint64_t field = key >> 3;
        auto want = [&](int w) {
            if (wire != w)
                r.fail("field " + std::to_string(field) + " has wire type " + std::to_string(wire) + ", not " +
                       std::to_string(w));
        };
        switch (field) {
            case 1: want(0); d.channels = as_int32(r, r.varint(), "channels"); break;
            case 2: want(0); d.height = as_int32(r, r.varint(), "height"); break;
            case 3: want(0); d.width = as_int32(r, r.varint(), "width"); break;
            case 4: {
                want(2);
                const ProtoWire field = r.sub();
                d.data = field.data();
                d.data_size = field.remaining();
                break;
            }
            case 5: want(0); d.label = as_int32(r, r.varint(), "label"); break;
            case 6:
                if (wire == 5) {
                    d.float_data.push_back(r.fixed<float>());
                } else {
                    want(2);  // packed
                    ProtoWire packed = r.sub();
                    if (packed.remaining() % 4) r.fail("packed float_data of " + std::to_string(packed.remaining()) + " bytes");
                    while (!packed.done()) d.float_data.push_back(packed.fixed<float>());
                }
                break;
            case 7: want(0); d.encoded = r.varint() != 0; break;
            default:
                if (field == 0) r.fail("field number 0");
                r.skip(wire);
        }
    }
    if (!d.encoded) {
        if (d.channels <= 0 || d.height <= 0 || d.width <= 0)
            r.fail("shape " + std::to_string(d.channels) + " x " + std::to_string(d.height) + " x " +
                   std::to_string(d.width) + " (every dimension must be positive)");
        if (d.channels > 4096 || d.height > (1 << 16) || d.width > (1 << 16))
            r.fail("shape " + std::to_string(d.channels) + " x " + std::to_string(d.height) + " x " +
                   std::to_string(d.width) + " is larger than any image (4096 channels, 65536 rows or columns)");
        const auto want = static_cast<uint64_t>(d.channels * d.height * d.width);
        if (d.data_size == 0 && d.float_data.empty()) r.fail("no data and no float_data");
        if (d.data_size && d.data_size != want)
            throw DataError(what + ": the Datum's data holds " + std::to_string(d.data_size) + " bytes, its shape " +
                            std::to_string(d.channels) + " x " + std::to_string(d.height) + " x " +
                            std::to_string(d.width) + " needs " + std::to_string(want));
        if (!d.data_size && d.float_data.size() != want)
            throw DataError(what + ": the Datum's float_data holds " + std::to_string(d.float_data.size()) +
                            " values, its shape needs " + std::to_string(want));
    } else if (d.data_size == 0) {
        r.fail("encoded, but no data");
    }
    return d;
}

std::vector<uint8_t> encode_datum(int channels, int height, int width, const uint8_t* data, size_t data_size,
                                  int label, bool encoded) {
    std::string out;
    auto int_field = [&](int field, int64_t v) {
        put_varint(out, static_cast<uint64_t>(field) << 3);
        put_varint(out, static_cast<uint64_t>(v));
    };
    int_field(1, channels);
    int_field(2, height);
    int_field(3, width);
    put_varint(out, (4u << 3) | 2);
    put_varint(out, data_size);
    out.append(reinterpret_cast<const char*>(data), data_size);
    int_field(5, label);
    if (encoded) int_field(7, 1);
    return std::vector<uint8_t>(out.begin(), out.end());
}

}  // namespace rudra::data
