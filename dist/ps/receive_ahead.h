// Receiving ahead, as the paper's parameter server does ("the message handling itself is
// multithreaded"): a thread of its own receives the next message into a spare buffer while the
// owner handles the last one, so that taking a gradient out of the transport (a copy of the
// whole model for every message) overlaps the update of the one before.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dist/transport/transport.h"

namespace rudra::dist {

class ReceiveAhead {
public:
    // Receives from any rank, any tag. `sender_alive(rank)`: a message from a rank that stops
    // while sending it is given up (and logged through `log`).
    ReceiveAhead(Transport& t, std::function<bool(int)> sender_alive, std::function<void(const std::string&)> log);
    // Gives up the receive in progress and ends the thread.
    ~ReceiveAhead();
    // The same, keeping a message the thread has already taken: next() still returns it (the PS
    // counts a last heartbeat, so that the final drain does not wait for it again).
    void stop();
    ReceiveAhead(const ReceiveAhead&) = delete;
    ReceiveAhead& operator=(const ReceiveAhead&) = delete;

    // The next message, its bytes swapped into `buf` (whose old bytes become the thread's spare),
    // once one is there; none when `keep_waiting()` turns false first (tested every millisecond).
    // Rethrows what the thread threw.
    std::optional<Envelope> next(std::vector<char>& buf, const KeepWaiting& keep_waiting);

private:
    void run();
    bool quitting();

    Transport& t_;
    std::function<bool(int)> sender_alive_;
    std::function<void(const std::string&)> log_;
    std::vector<char> spare_;
    Envelope envelope_{};
    std::mutex mu_;
    std::condition_variable cv_;
    bool ready_ = false, quit_ = false;  // ready_: spare_ holds envelope_'s message
    std::exception_ptr error_;
    std::thread thread_;  // last: starts once the members above exist
};

}  // namespace rudra::dist
