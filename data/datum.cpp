#include "data/datum.h"

#include <cstring>

#include "data/dataset.h"

namespace rudra::data {
namespace {

class ProtoReader {
public:
    ProtoReader(const uint8_t* b, size_t n, const std::string& what) : b_(b), n_(n), what_(what) {}
    bool done() const { return at_ >= n_; }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at_ >= n_) fail("a varint runs past the end of the record");
            const uint8_t byte = b_[at_++];
            v |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return v;
        }
        fail("a varint longer than 10 bytes");
    }
    const uint8_t* bytes(size_t& len) {
        const uint64_t l = varint();
        if (l > n_ - at_)
            fail("a field of " + std::to_string(l) + " bytes where " + std::to_string(n_ - at_) + " remain");
        len = static_cast<size_t>(l);
        const uint8_t* p = b_ + at_;
        at_ += len;
        return p;
    }
    float fixed32() {
        if (n_ - at_ < 4) fail("a 4-byte value runs past the end of the record");
        float f;
        std::memcpy(&f, b_ + at_, 4);
        at_ += 4;
        return f;
    }
    void skip(int wire) {
        size_t len;
        switch (wire) {
            case 0: varint(); break;
            case 1:
                if (n_ - at_ < 8) fail("an 8-byte value runs past the end of the record");
                at_ += 8;
                break;
            case 2: bytes(len); break;
            case 5: fixed32(); break;
            default: fail("wire type " + std::to_string(wire) + " (not a protobuf Datum)");
        }
    }
    [[noreturn]] void fail(const std::string& why) const {
        throw DataError(what_ + ": not a Caffe Datum: " + why + " (at byte " + std::to_string(at_) + " of " +
                        std::to_string(n_) + ")");
    }

private:
    const uint8_t* b_;
    size_t n_, at_ = 0;
    const std::string& what_;
};

int64_t as_int32(ProtoReader& r, uint64_t v, const char* field) {
    // int32 fields: negatives are sign-extended to 10 bytes.
    const auto s = static_cast<int64_t>(v);
    if (s < INT32_MIN || s > INT32_MAX) r.fail(std::string(field) + " " + std::to_string(s) + " is not an int32");
    return s;
}

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
}

}  // namespace

Datum parse_datum(const uint8_t* bytes, size_t size, const std::string& what) {
    ProtoReader r(bytes, size, what);
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
            case 4: want(2); d.data = r.bytes(d.data_size); break;
            case 5: want(0); d.label = as_int32(r, r.varint(), "label"); break;
            case 6:
                if (wire == 5) {
                    d.float_data.push_back(r.fixed32());
                } else {
                    want(2);  // packed
                    size_t len;
                    const uint8_t* p = r.bytes(len);
                    if (len % 4) r.fail("packed float_data of " + std::to_string(len) + " bytes");
                    const size_t at = d.float_data.size();
                    d.float_data.resize(at + len / 4);
                    std::memcpy(d.float_data.data() + at, p, len);
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
    std::vector<uint8_t> out;
    auto int_field = [&](int field, int64_t v) {
        put_varint(out, static_cast<uint64_t>(field) << 3);
        put_varint(out, static_cast<uint64_t>(v));
    };
    int_field(1, channels);
    int_field(2, height);
    int_field(3, width);
    put_varint(out, (4u << 3) | 2);
    put_varint(out, data_size);
    out.insert(out.end(), data, data + data_size);
    int_field(5, label);
    if (encoded) int_field(7, 1);
    return out;
}

}  // namespace rudra::data
