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
    put_bytes(out, d.pixel_data(), static_cast<size_t>(d.size() * d.sample_bytes()));
    put_bytes(out, d.labels.data(), d.labels.size());
}

class Reader {
public:
    Reader(const uint8_t* b, size_t size) : b_(b), size_(size) {}
    uint64_t u64() {
        need(8);
        uint64_t v;
        std::memcpy(&v, b_ + at_, 8);
        at_ += 8;
        return v;
    }
    template <class T>
    void bytes(T& into) {
        const uint64_t n = u64();
        need(n);
        into.assign(b_ + at_, b_ + at_ + n);
        at_ += n;
    }
    // The next byte string where it lies, without copying it.
    const uint8_t* view(uint64_t& n) {
        n = u64();
        need(n);
        const uint8_t* p = b_ + at_;
        at_ += n;
        return p;
    }
    // With `keep`, the pixels stay where they are, kept alive by it.
    Dataset dataset(const std::shared_ptr<const void>& keep = nullptr) {
        Dataset d;
        d.channels = static_cast<int>(u64());
        d.height = static_cast<int>(u64());
        d.width = static_cast<int>(u64());
        d.num_classes = static_cast<int>(u64());
        bytes(d.source);
        bytes(d.label_source);
        uint64_t pixel_bytes = 0;
        if (keep) {
            d.mapped = view(pixel_bytes);
            d.mapping = keep;
        } else {
            bytes(d.pixels);
            pixel_bytes = d.pixels.size();
        }
        bytes(d.labels);
        if (pixel_bytes != d.labels.size() * static_cast<uint64_t>(d.sample_bytes()))
            throw DataError("packed data set: " + std::to_string(pixel_bytes) + " pixel bytes for " +
                            std::to_string(d.labels.size()) + " labels");
        return d;
    }
    bool done() const { return at_ == size_; }

private:
    void need(uint64_t n) const {
        if (n > size_ - at_) throw DataError("packed data set: truncated");
    }
    const uint8_t* b_;
    size_t size_;
    size_t at_ = 0;
};

TrainTest read_packed(Reader& r, const std::shared_ptr<const void>& keep_train) {
    if (r.u64() != kMagic) throw DataError("packed data set: not one (bad magic number)");
    TrainTest t;
    r.bytes(t.format);
    t.train = r.dataset(keep_train);
    t.test = r.dataset();
    if (!r.done()) throw DataError("packed data set: bytes after its end");
    return t;
}

}  // namespace

std::vector<uint8_t> pack_train_test(const TrainTest& t) {
    std::vector<uint8_t> out;
    out.reserve(static_cast<size_t>((t.train.sample_bytes() + 1) * t.train.size() + (t.test.sample_bytes() + 1) * t.test.size()) +
                1024);
    put_u64(out, kMagic);
    put_bytes(out, t.format.data(), t.format.size());
    put_dataset(out, t.train);
    put_dataset(out, t.test);
    return out;
}

TrainTest unpack_train_test(const std::vector<uint8_t>& bytes) {
    Reader r(bytes.data(), bytes.size());
    return read_packed(r, nullptr);
}

TrainTest view_train_test(const uint8_t* bytes, size_t size, std::shared_ptr<const void> keep) {
    if (!keep) throw std::invalid_argument("view_train_test: nothing keeps the bytes alive");
    Reader r(bytes, size);
    return read_packed(r, keep);
}

}  // namespace rudra::data
