// Sending without waiting for the peer: one message at a time in flight on a thread of its own
// (a leaf PS's sums going up, adv*'s weights going down from the root), and the buffers of sends
// given up while still posted.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rudra::dist {

class Timeline;

// Buffers of sends that were given up (the peer stopped taking them) while still posted: MPI may
// still read them, so they are kept until the end of the run.
class PostedBuffers {
public:
    // Keeps `bytes` and leaves a copy in their place, for the caller to send on to others.
    void keep_copying(std::vector<char>& bytes) {
        kept_.push_back(std::move(bytes));
        bytes = kept_.back();
    }
    // Keeps `bytes` and leaves them empty.
    void keep(std::vector<char>& bytes) {
        kept_.push_back(std::move(bytes));
        bytes = std::vector<char>();
    }

private:
    std::vector<std::vector<char>> kept_;
};

class SendThread {
public:
    // Sends `bytes` on the thread; gives up when `quitting()` (the owner is ending) and then
    // keeps `bytes` in `posted` if the send is still posted.
    using SendOne =
        std::function<void(std::vector<char>& bytes, const std::function<bool()>& quitting, PostedBuffers& posted)>;
    // `span`: the name of each send on the timeline's push lane.
    SendThread(SendOne send_one, Timeline* timeline, const char* span);
    // Gives up a send in flight (through `quitting`) and ends the thread.
    ~SendThread();
    SendThread(const SendThread&) = delete;
    SendThread& operator=(const SendThread&) = delete;

    // No message in flight; rethrows what the thread threw.
    bool idle();
    // Swaps `filled` with the buffer sent before (the caller fills it again) and sends it;
    // call only when idle().
    void send(std::vector<char>& filled);

private:
    void run();
    bool quitting();

    SendOne send_one_;
    Timeline* timeline_;
    const char* span_;
    std::vector<char> sending_;
    PostedBuffers posted_;  // the thread's own
    std::mutex mu_;
    std::condition_variable cv_;
    bool pending_ = false, quit_ = false;
    std::exception_ptr error_;
    std::thread thread_;  // last: starts once the members above exist
};

}  // namespace rudra::dist
