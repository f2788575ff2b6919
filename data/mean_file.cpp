#include "data/mean_file.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "data/dataset.h"

namespace rudra::data {
namespace {

// The few protobuf wire-format reads a BlobProto needs, each checked against the bytes left.
class Wire {
public:
    Wire(const uint8_t* b, size_t n, const std::string& what) : b_(b), n_(n), what_(what) {}
    bool done() const { return at_ >= n_; }
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
    Wire sub() {
        const uint64_t len = varint();
        if (len > n_ - at_) fail("a field of " + std::to_string(len) + " bytes where " + std::to_string(n_ - at_) + " remain");
        Wire w(b_ + at_, static_cast<size_t>(len), what_);
        at_ += static_cast<size_t>(len);
        return w;
    }
    template <class T>
    T fixed() {
        if (n_ - at_ < sizeof(T)) fail("a value runs past the end");
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
    size_t remaining() const { return n_ - at_; }
    [[noreturn]] void fail(const std::string& why) const {
        throw DataError(what_ + ": not a Caffe mean file (BlobProto): " + why);
    }

private:
    const uint8_t* b_;
    size_t n_, at_ = 0;
    const std::string& what_;
};

template <class T>
void read_reals(Wire& w, int wire, std::vector<float>& out) {
    if (wire == 2) {
        Wire p = w.sub();
        if (p.remaining() % sizeof(T)) p.fail("packed values of " + std::to_string(p.remaining()) + " bytes");
        while (!p.done()) out.push_back(static_cast<float>(p.fixed<T>()));
    } else if (wire == (sizeof(T) == 4 ? 5 : 1)) {
        out.push_back(static_cast<float>(w.fixed<T>()));
    } else {
        w.fail("data of wire type " + std::to_string(wire));
    }
}

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
}

}  // namespace

MeanImage parse_mean_blob(const uint8_t* bytes, size_t size, const std::string& what) {
    Wire w(bytes, size, what);
    int64_t legacy[4] = {0, 0, 0, 0};  // num, channels, height, width
    std::vector<int64_t> shape;
    std::vector<float> values;
    while (!w.done()) {
        const uint64_t key = w.varint();
        const int wire = static_cast<int>(key & 7);
        const uint64_t field = key >> 3;
        if (field >= 1 && field <= 4 && wire == 0) {
            legacy[field - 1] = static_cast<int64_t>(w.varint());
        } else if (field == 7 && wire == 2) {
            Wire s = w.sub();
            while (!s.done()) {
                const uint64_t k = s.varint();
                if ((k >> 3) == 1 && (k & 7) == 2) {
                    Wire dims = s.sub();
                    while (!dims.done()) shape.push_back(static_cast<int64_t>(dims.varint()));
                } else if ((k >> 3) == 1 && (k & 7) == 0) {
                    shape.push_back(static_cast<int64_t>(s.varint()));
                } else {
                    s.skip(static_cast<int>(k & 7));
                }
            }
        } else if (field == 5) {
            read_reals<float>(w, wire, values);
        } else if (field == 8) {
            read_reals<double>(w, wire, values);
        } else {
            if (field == 0) w.fail("field number 0");
            w.skip(wire);
        }
    }
    if (shape.empty()) shape.assign(legacy, legacy + 4);
    // (1, C, H, W), or (C, H, W).
    if (shape.size() == 4 && shape[0] == 1) shape.erase(shape.begin());
    if (shape.size() != 3)
        throw DataError(what + ": a mean file holds one image (1 x C x H x W); this blob has " +
                        std::to_string(shape.size()) + " dimensions" + (shape.size() == 4 ? " and num " + std::to_string(shape[0]) : ""));
    for (int64_t d : shape)
        if (d <= 0 || d > (1 << 16)) throw DataError(what + ": a mean image dimension of " + std::to_string(d));
    MeanImage m;
    m.channels = static_cast<int>(shape[0]);
    m.height = static_cast<int>(shape[1]);
    m.width = static_cast<int>(shape[2]);
    const auto want = static_cast<size_t>(shape[0] * shape[1] * shape[2]);
    if (values.size() != want)
        throw DataError(what + ": the mean image is " + std::to_string(m.channels) + " x " + std::to_string(m.height) +
                        " x " + std::to_string(m.width) + " (" + std::to_string(want) + " values) but holds " +
                        std::to_string(values.size()) + " values");
    m.values = std::move(values);
    return m;
}

MeanImage read_mean_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot open the mean file");
    const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(path + ": error reading the mean file");
    if (b.empty()) throw DataError(path + ": the mean file is empty");
    return parse_mean_blob(b.data(), b.size(), path);
}

std::vector<uint8_t> encode_mean_blob(const MeanImage& m) {
    std::vector<uint8_t> out;
    const int dims[4] = {1, m.channels, m.height, m.width};
    for (int f = 1; f <= 4; ++f) {
        put_varint(out, static_cast<uint64_t>(f) << 3);
        put_varint(out, static_cast<uint64_t>(dims[f - 1]));
    }
    put_varint(out, (5u << 3) | 2);
    put_varint(out, m.values.size() * 4);
    const auto* p = reinterpret_cast<const uint8_t*>(m.values.data());
    out.insert(out.end(), p, p + m.values.size() * 4);
    return out;
}

}  // namespace rudra::data
