// How a rank waits for a message or a send to complete. MPICH busy-polls inside blocking calls,
// which with more ranks than cores makes every call 100-1000x slower; so transports test a
// non-blocking operation, spinning a little and then sleeping between tests. With dedicated
// cores, set sleep_us to 0 to spin.
#pragma once
#include <time.h>

#include <cstddef>
#include <functional>

namespace rudra::dist {

struct WaitPolicy {
    int spin = 50;       // tests before the first sleep
    int sleep_us = 20;   // sleep between later tests; 0 = spin forever
    // Sleep between tests of a message on its way: one being received, and a sent one of at
    // least transfer_min_bytes. MPICH moves a message in pieces, each only when a rank tests it.
    // Measured on 2 cores: 1-softsync with 30 learners of a 0.33 MB model ran at 672 images/s with
    // 2 ms between a receiver's tests and 1,757 with 20 us; async with 4 learners of a 9.4 MB model
    // at 45, 140 with fast receives and 385 with fast sends too. Fast tests of the small model's
    // sends (30 learners waiting on one PS) cut it to 1,196.
    int transfer_sleep_us = 20;
    size_t transfer_min_bytes = size_t{1} << 20;

    WaitPolicy for_transfer() const {
        WaitPolicy p = *this;
        if (transfer_sleep_us < sleep_us) p.sleep_us = transfer_sleep_us;
        return p;
    }

    // Measured with 6 and 32 ranks on 2 cores: polling every 20 us costs more CPU in the
    // scheduler than the training itself and makes learners uneven (long staleness tails);
    // 2 ms sleeps were both faster and gave the paper's staleness histograms.
    static WaitPolicy for_load(int ranks_on_node, int threads_per_rank, int cores) {
        WaitPolicy p;
        if (static_cast<long>(ranks_on_node) * threads_per_rank > cores) p.sleep_us = 2000;
        return p;
    }

    // Calls done() until it returns true (then returns true), or until keep_waiting(), asked
    // between tests after the spin, returns false (then false).
    template <class Done>
    bool wait(Done&& done, const std::function<bool()>& keep_waiting) const {
        for (int i = 0; i < spin; ++i)
            if (done()) return true;
        const timespec pause{sleep_us / 1000000, static_cast<long>(sleep_us % 1000000) * 1000L};  // tv_nsec < 1e9
        while (!done()) {
            if (keep_waiting && !keep_waiting()) return false;
            if (sleep_us > 0) nanosleep(&pause, nullptr);
        }
        return true;
    }
    template <class Done>
    void wait(Done&& done) const {
        wait(done, std::function<bool()>());
    }
};

}  // namespace rudra::dist
