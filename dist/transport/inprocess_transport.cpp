#include "dist/transport/inprocess_transport.h"

#include <algorithm>
#include <cstring>

#include "kernels/bf16/bf16.h"

namespace rudra::dist {

bool InProcessTransport::send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting&) {
    InProcessHub::Message m{rank_, tag, std::vector<char>(bytes)};
    if (bytes) std::memcpy(m.bytes.data(), data, bytes);
    {
        std::lock_guard<std::mutex> lock(hub_.mu_);
        hub_.queues_.at(dest).push_back(std::move(m));
    }
    hub_.cv_.notify_all();
    count_sent(tag, bytes);
    return true;  // buffered: always complete
}

bool InProcessTransport::barrier_while(const KeepWaiting&) {
    std::unique_lock<std::mutex> lock(hub_.mu_);
    const long gen = hub_.generation_;
    if (++hub_.arrived_ == hub_.size()) {
        hub_.arrived_ = 0;
        ++hub_.generation_;
        hub_.cv_.notify_all();
        return true;
    }
    hub_.cv_.wait(lock, [&] { return hub_.generation_ != gen; });
    return true;
}

std::optional<Envelope> InProcessTransport::recv_while(int source, int tag, std::vector<char>& buf,
                                                      const KeepWaiting& keep_waiting, const std::function<bool(int)>&) {
    std::unique_lock<std::mutex> lock(hub_.mu_);
    auto& q = hub_.queues_.at(rank_);
    for (;;) {
        for (auto it = q.begin(); it != q.end(); ++it) {
            if ((source != kAnySource && it->source != source) || (tag != kAnyTag && it->tag != tag)) continue;
            Envelope e{it->source, it->tag, it->bytes.size()};
            buf.swap(it->bytes);
            q.erase(it);
            count_received(e.tag, e.bytes);
            return e;
        }
        if (!keep_waiting) {
            hub_.cv_.wait(lock);
        } else {
            if (!keep_waiting()) return std::nullopt;
            hub_.cv_.wait_for(lock, std::chrono::milliseconds(10));  // asks keep_waiting again
        }
    }
}

void InProcessSumGroup::start(float* data, size_t count, Wire wire) {
    count_sum(count, wire);
    std::lock_guard<std::mutex> lock(hub_.mu_);
    InProcessSumHub::Op& op = hub_.ops_[next_++];
    if (op.data.empty()) {
        op.data.assign(static_cast<size_t>(hub_.members_), nullptr);
        op.count = count;
        op.wire = wire;
    }
    if (op.count != count || op.wire != wire)
        throw std::logic_error("InProcessSumGroup: members posted sums of different sizes or wires");
    op.data[static_cast<size_t>(index_)] = data;
    if (++op.posted < hub_.members_) return;
    std::vector<float> sum(op.data[0], op.data[0] + count);
    if (wire == Wire::Bf16) {
        // As a chain of BF16 messages: each value rounded as sent, each partial sum rounded again.
        for (float& v : sum) v = kernels::round_to_bf16(v);
        for (size_t m = 1; m < op.data.size(); ++m)
            for (size_t i = 0; i < count; ++i)
                sum[i] = kernels::round_to_bf16(sum[i] + kernels::round_to_bf16(op.data[m][i]));
    } else {
        for (size_t m = 1; m < op.data.size(); ++m)
            for (size_t i = 0; i < count; ++i) sum[i] += op.data[m][i];
    }
    for (float* d : op.data) std::copy(sum.begin(), sum.end(), d);
    op.done = true;
    hub_.cv_.notify_all();
}

bool InProcessSumGroup::wait_all(const KeepWaiting& keep_waiting) {
    std::unique_lock<std::mutex> lock(hub_.mu_);
    for (; first_open_ < next_; ++first_open_) {
        while (!hub_.cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return hub_.ops_.at(first_open_).done; }))
            if (keep_waiting && !keep_waiting()) return false;
        if (++hub_.ops_.at(first_open_).collected == hub_.members_) hub_.ops_.erase(first_open_);
    }
    return true;
}

}  // namespace rudra::dist
