// How a rank waits for a message or a send to complete. MPICH busy-polls inside blocking calls,
// which with more ranks than cores makes every call 100-1000x slower; so transports test a
// non-blocking operation, spinning a little and then sleeping between tests. With dedicated
// cores, set sleep_us to 0 to spin.
#pragma once
#include <time.h>

#include <chrono>
#include <cstddef>
#include <functional>

namespace rudra::dist {

struct WaitPolicy {
    int spin = 50;       // tests before the first sleep
    int sleep_us = 20;   // sleep between later tests; 0 = spin forever
    // A message on its way (one being received, and a sent one of at least transfer_min_bytes)
    // moves in pieces, each only when a rank tests it: one test per sleep caps its speed. So
    // after each of a transfer's sleeps the rank tests again and again for transfer_burst_us.
    // Measured on 2 cores (bench/results/image_input.md), a 244 MB message (AlexNet's weights)
    // one way between 2 ranks: 198 ms with one test per 20 us sleep, 18 ms spinning, 23 ms with
    // 1 ms bursts; with 4 more ranks computing: 488 ms, 946 ms yielding between tests, 98 ms with
    // the bursts. (Earlier, 1-softsync with 30 learners of a 0.33 MB model ran at 672 images/s
    // with 2 ms sleeps between a receiver's tests and 1,757 with 20 us.)
    int transfer_burst_us = 1000;
    int transfer_sleep_us = 20;  // a transfer's sleeps, when shorter than sleep_us
    size_t transfer_min_bytes = size_t{1} << 20;

    WaitPolicy for_transfer() const {
        WaitPolicy p = *this;
        p.burst_us = transfer_burst_us;
        if (transfer_sleep_us < sleep_us) p.sleep_us = transfer_sleep_us;
        return p;
    }
    int burst_us = 0;  // after each sleep, test again and again for this long (for_transfer's)

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
            if (burst_us > 0) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(burst_us);
                while (std::chrono::steady_clock::now() < until)
                    if (done()) return true;
            }
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
