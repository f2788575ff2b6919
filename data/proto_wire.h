// The protobuf wire format, read with every length checked against the bytes left: what the
// decoders of Caffe's Datum (data/datum.h) and BlobProto (data/mean_file.h) share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "data/dataset.h"

namespace rudra::data {

class ProtoWire {
public:
    // `what` prefixes every error: "<what>: <problem> (at byte N of M)".
    ProtoWire(const uint8_t* b, size_t n, const std::string& what) : b_(b), n_(n), what_(what) {}
    bool done() const { return at_ >= n_; }
    size_t remaining() const { return n_ - at_; }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at_ >= n_) fail("a varint runs past the end");
            const uint8_t byte = b_[at_++];
            v |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return v;
        }
        fail("a varint longer than 10 bytes");
    }
    // A length-delimited field: its bytes, read with a reader of their own.
    ProtoWire sub() {
        const uint64_t len = varint();
        if (len > n_ - at_) fail("a field of " + std::to_string(len) + " bytes where " + std::to_string(n_ - at_) + " remain");
        ProtoWire w(b_ + at_, static_cast<size_t>(len), what_);
        at_ += static_cast<size_t>(len);
        return w;
    }
    const uint8_t* data() const { return b_; }
    template <class T>
    T fixed() {
        if (n_ - at_ < sizeof(T)) fail("a " + std::to_string(sizeof(T)) + "-byte value runs past the end");
        T v;
        std::memcpy(&v, b_ + at_, sizeof(T));
        at_ += sizeof(T);
        return v;
    }
    void skip(int wire) {
        switch (wire) {
            case 0: varint(); break;
            case 1: fixed<uint64_t>(); break;
            case 2: sub(); break;
            case 5: fixed<uint32_t>(); break;
            default: fail("wire type " + std::to_string(wire));
        }
    }
    [[noreturn]] void fail(const std::string& why) const {
        throw DataError(what_ + ": " + why + " (at byte " + std::to_string(at_) + " of " + std::to_string(n_) + ")");
    }

private:
    const uint8_t* b_;
    size_t n_, at_ = 0;
    const std::string& what_;
};

inline void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

}  // namespace rudra::data
