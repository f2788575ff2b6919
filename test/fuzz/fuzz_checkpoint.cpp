// A distributed run's checkpoint: the snapshot, its metadata (settings, counters, staleness
// statistics and vector clocks) and what a resumed run takes from it. As in fuzz_snapshot, an
// odd first byte has the target write the right CRC, so that the metadata is reached. A
// checkpoint is refused naming the file, or every accessor a resumed run uses works on it.
#include <cstring>

#include "dist/run/checkpoint.h"
#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rudra;
    if (size == 0) return 0;
    const std::string bytes = fuzz::with_fixed_crc(data, size);
    dist::run::DistCheckpoint ck;
    try {
        ck = dist::run::parse_dist_checkpoint(bytes, fuzz::kInputName);
    } catch (const std::exception& e) {
        fuzz::require_named(e);
        return 0;
    }
    fuzz::require(ck.epoch() >= 0 && ck.samples() >= 0 && ck.elapsed_s() >= 0 && ck.learners() >= 1,
                  "an accepted checkpoint's counters");
    for (int i = -1; i <= ck.learners() && i < 64; ++i) fuzz::require(ck.applied(i) >= 0, "applied counts");
    for (const bool given : {false, true}) {
        dist::run::DistOptions o;
        if (given) o.given = {"--epochs", "--protocol", "--batch"};
        o.epochs = 1000000;
        try {
            dist::run::apply_checkpoint_settings(o, ck);
        } catch (const std::exception& e) {
            fuzz::require_named(e);
        }
    }
    return 0;
}
