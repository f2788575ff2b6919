// A transport between threads of one process, for unit tests of the protocol logic only (the
// program itself always runs roles as separate MPI processes). Sends are buffered.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include <map>
#include <vector>

#include "dist/transport/sum_group.h"
#include "dist/transport/transport.h"

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

// The sums of a group of threads: each sum completes when every member has posted it, summed
// in member order by the last to post, so that every member gets the same bits.
class InProcessSumHub {
public:
    explicit InProcessSumHub(int members) : members_(members) {}

private:
    friend class InProcessSumGroup;
    struct Op {
        std::vector<float*> data;
        size_t count = 0;
        Wire wire = Wire::Fp32;
        int posted = 0, collected = 0;
        bool done = false;
    };
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<long, Op> ops_;  // by sequence number
    int members_;
};

class InProcessSumGroup final : public SumGroup {
public:
    InProcessSumGroup(InProcessSumHub& hub, int index) : hub_(hub), index_(index) {}
    int members() const override { return hub_.members_; }
    int index() const override { return index_; }
    void start(float* data, size_t count, Wire wire = Wire::Fp32) override;
    void progress() override {}
    bool wait_all(const KeepWaiting& keep_waiting = {}) override;

private:
    InProcessSumHub& hub_;
    int index_;
    long next_ = 0, first_open_ = 0;  // this member's sums [first_open_, next_) are not collected yet
};

}  // namespace rudra::dist
