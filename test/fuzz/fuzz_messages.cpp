// The decoders of the messages between ranks (dist/transport/messages.h): headers, float payloads and the
// leaf PS's relayed sums. A message of any length and contents is taken whole or refused; a sum
// is taken exactly when its length matches its count (checked here in 128-bit arithmetic).
#include <vector>

#include "dist/transport/messages.h"
#include "test/fuzz/fuzz_target.h"

namespace {

template <class H>
void decode(const std::vector<char>& in, size_t floats) {
    using namespace rudra::dist;
    try {
        unpack_header<H>(in);
        rudra::fuzz::require(in.size() >= sizeof(H), "a header is taken only from a message as long");
    } catch (const std::runtime_error&) {
        rudra::fuzz::require(in.size() < sizeof(H), "a header is refused only when the message is shorter");
    }
    std::vector<float> out(floats);
    try {
        unpack_floats<H>(in, out.data(), floats);
        rudra::fuzz::require(in.size() == sizeof(H) + floats * sizeof(float), "a payload is taken at its exact size");
    } catch (const std::runtime_error&) {
        rudra::fuzz::require(in.size() != sizeof(H) + floats * sizeof(float), "a payload of the right size is taken");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra::dist;
    if (size < 1) return 0;
    const std::vector<char> in(reinterpret_cast<const char*>(data) + 1, reinterpret_cast<const char*>(data) + size);
    const size_t floats = data[0] % 16;
    decode<GradientHeader>(in, floats);
    decode<WeightsReply>(in, floats);
    decode<EpochWeightsHeader>(in, floats);
    decode<GradientSumHeader>(in, floats);
    decode<LearnerReport>(in, 0);
    decode<RankStarted>(in, 0);
    if (in.size() >= sizeof(GradientSumHeader)) {
        const auto h = unpack_header<GradientSumHeader>(in);
        const __int128 want = static_cast<__int128>(sizeof(GradientSumHeader)) + floats * sizeof(float) +
                              static_cast<__int128>(h.count) * static_cast<__int128>(sizeof(GradientSumEntry));
        const bool fits = gradient_sum_fits(in.size(), floats * sizeof(float), h.count);
        rudra::fuzz::require(fits == (h.count >= 1 && want == static_cast<__int128>(in.size())),
                             "a relayed sum fits exactly when its length matches its count");
    }
    return 0;
}
