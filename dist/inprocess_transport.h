// A transport between threads of one process, for unit tests of the protocol logic only (the
// program itself always runs roles as separate MPI processes). Sends are buffered.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "dist/transport.h"

namespace rudra::dist {

class InProcessHub {
public:
    explicit InProcessHub(int ranks) : queues_(ranks) {}
    int size() const { return static_cast<int>(queues_.size()); }

private:
    friend class InProcessTransport;
    struct Message {
        int source, tag;
        std::vector<char> bytes;
    };
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::deque<Message>> queues_;
    int arrived_ = 0;
    long generation_ = 0;
};

class InProcessTransport final : public Transport {
public:
    InProcessTransport(InProcessHub& hub, int rank) : hub_(hub), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return hub_.size(); }
    bool send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting& keep_waiting) override;
    std::optional<Envelope> recv_while(int source, int tag, std::vector<char>& buf, const KeepWaiting& keep_waiting,
                                       const std::function<bool(int)>& sender_alive = {}) override;
    bool barrier_while(const KeepWaiting& keep_waiting) override;

private:
    InProcessHub& hub_;
    int rank_;
};

}  // namespace rudra::dist
