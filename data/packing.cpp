#include <cstring>

#include "data/dataset.h"

namespace rudra::data {
namespace {

constexpr uint64_t kMagic = 0x31746b6170647572ull;  // "rudpakt1"

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
    const size_t at = out.size();
    out.resize(at + 8);
    std::memcpy(out.data() + at, &v, 8);
}
void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
    put_u64(out, n);
    const size_t at = out.size();
    out.resize(at + n);
    if (n) std::memcpy(out.data() + at, p, n);
}
void put_dataset(std::vector<uint8_t>& out, const Dataset& d) {
    put_u64(out, static_cast<uint64_t>(d.channels));
    put_u64(out, static_cast<uint64_t>(d.height));
    put_u64(out, static_cast<uint64_t>(d.width));
    put_u64(out, static_cast<uint64_t>(d.num_classes));
    put_bytes(out, d.source.data(), d.source.size());
    put_bytes(out, d.label_source.data(), d.label_source.size());
    put_bytes(out, d.pixels.data(), d.pixels.size());
    put_bytes(out, d.labels.data(), d.labels.size());
}

class Reader {
public:
    explicit Reader(const std::vector<uint8_t>& b) : b_(b) {}
    uint64_t u64() {
        need(8);
        uint64_t v;
        std::memcpy(&v, b_.data() + at_, 8);
        at_ += 8;
        return v;
    }
    template <class T>
    void bytes(T& into) {
        const uint64_t n = u64();
        need(n);
        into.assign(b_.begin() + static_cast<long>(at_), b_.begin() + static_cast<long>(at_ + n));
        at_ += n;
    }
    Dataset dataset() {
        Dataset d;
        d.channels = static_cast<int>(u64());
        d.height = static_cast<int>(u64());
        d.width = static_cast<int>(u64());
        d.num_classes = static_cast<int>(u64());
        bytes(d.source);
        bytes(d.label_source);
        bytes(d.pixels);
        bytes(d.labels);
        if (d.pixels.size() != d.labels.size() * static_cast<size_t>(d.sample_bytes()))
            throw DataError("packed data set: " + std::to_string(d.pixels.size()) + " pixel bytes for " +
                            std::to_string(d.labels.size()) + " labels");
        return d;
    }
    bool done() const { return at_ == b_.size(); }

private:
    void need(uint64_t n) const {
        if (n > b_.size() - at_) throw DataError("packed data set: truncated");
    }
    const std::vector<uint8_t>& b_;
    size_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> pack_train_test(const TrainTest& t) {
    std::vector<uint8_t> out;
    out.reserve(t.train.pixels.size() + t.test.pixels.size() + t.train.labels.size() + t.test.labels.size() + 1024);
    put_u64(out, kMagic);
    put_bytes(out, t.format.data(), t.format.size());
    put_dataset(out, t.train);
    put_dataset(out, t.test);
    return out;
}

TrainTest unpack_train_test(const std::vector<uint8_t>& bytes) {
    Reader r(bytes);
    if (r.u64() != kMagic) throw DataError("packed data set: not one (bad magic number)");
    TrainTest t;
    r.bytes(t.format);
    t.train = r.dataset();
    t.test = r.dataset();
    if (!r.done()) throw DataError("packed data set: bytes after its end");
    return t;
}

}  // namespace rudra::data
