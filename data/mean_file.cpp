#include "data/mean_file.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "data/dataset.h"
#include "data/proto_wire.h"

namespace rudra::data {
namespace {

template <class T>
void read_reals(ProtoWire& w, int wire, std::vector<float>& out) {
    if (wire == 2) {
        ProtoWire p = w.sub();
        if (p.remaining() % sizeof(T)) p.fail("packed values of " + std::to_string(p.remaining()) + " bytes");
        while (!p.done()) out.push_back(static_cast<float>(p.fixed<T>()));
    } else if (wire == (sizeof(T) == 4 ? 5 : 1)) {
        out.push_back(static_cast<float>(w.fixed<T>()));
    } else {
        w.fail("data of wire type " + std::to_string(wire));
    }
}

}  // namespace

MeanImage parse_mean_blob(const uint8_t* bytes, size_t size, const std::string& what) {
    const std::string prefix = what + ": not a Caffe mean file (BlobProto)";
    ProtoWire w(bytes, size, prefix);
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
            ProtoWire s = w.sub();
            while (!s.done()) {
                const uint64_t k = s.varint();
                if ((k >> 3) == 1 && (k & 7) == 2) {
                    ProtoWire dims = s.sub();
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
    std::string out;
    const int dims[4] = {1, m.channels, m.height, m.width};
    for (int f = 1; f <= 4; ++f) {
        put_varint(out, static_cast<uint64_t>(f) << 3);
        put_varint(out, static_cast<uint64_t>(dims[f - 1]));
    }
    put_varint(out, (5u << 3) | 2);
    put_varint(out, m.values.size() * 4);
    out.append(reinterpret_cast<const char*>(m.values.data()), m.values.size() * 4);
    return std::vector<uint8_t>(out.begin(), out.end());
}

}  // namespace rudra::data
