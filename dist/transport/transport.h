// Point-to-point messages between ranks. Two implementations: MPI (the real one) and an
// in-process hub used by unit tests of the protocol logic.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rudra::dist {

constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;
// Seconds of silence after which a rank is taken for lost, unless the run sets another
// (`rudra dist --peer-timeout`).
constexpr double kDefaultPeerTimeoutS = 15.0;

// Asked while a send or receive waits: false gives up. Empty: wait until it completes.
using KeepWaiting = std::function<bool()>;
inline KeepWaiting until(std::chrono::steady_clock::time_point deadline) {
    return [deadline] { return std::chrono::steady_clock::now() < deadline; };
}

// A failed operation with `peer` (kAnySource for a receive from anyone): the peer died or cannot
// be reached. Roles that go on without a lost peer catch it; to the others it is an error.
class PeerError : public std::runtime_error {
public:
    PeerError(int peer, const std::string& what) : std::runtime_error(what), peer_(peer) {}
    int peer() const { return peer_; }

private:
    int peer_;
};

// Point-to-point messages and their bytes (payloads, without MPI's envelopes), both ways.
struct TrafficCounts {
    int64_t sent_messages = 0, sent_bytes = 0, received_messages = 0, received_bytes = 0;
};

struct Envelope {
    int source = 0;
    int tag = 0;
    size_t bytes = 0;
};

class Transport {
public:
    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Returns true when `data` may be reused, false when `keep_waiting` said stop first (a peer
    // that died or stopped never takes a large message). After false the send stays posted:
    // `data` must stay allocated until the process ends. Safe from several threads.
    virtual bool send_while(int dest, int tag, const void* data, size_t bytes, const KeepWaiting& keep_waiting) = 0;
    // The first message from `source` with `tag` (or any) into `buf` (resized to it), or nothing
    // when `keep_waiting` said stop before one arrived. A message that has begun to arrive is
    // awaited while `sender_alive(its source)` holds (empty: until it is complete); a sender
    // that stops in the middle of it (dead, SIGSTOP) makes it throw PeerError, and `buf` is
    // then empty (its memory stays with the posted receive).
    virtual std::optional<Envelope> recv_while(int source, int tag, std::vector<char>& buf,
                                               const KeepWaiting& keep_waiting,
                                               const std::function<bool(int)>& sender_alive = {}) = 0;

    void send(int dest, int tag, const void* data, size_t bytes) { send_while(dest, tag, data, bytes, {}); }
    Envelope recv(int source, int tag, std::vector<char>& buf) { return *recv_while(source, tag, buf, {}); }
    // Returns when every rank has called it (so that training starts together, not as each
    // rank finishes loading its data).
    virtual bool barrier_while(const KeepWaiting& keep_waiting) = 0;
    void barrier() { barrier_while({}); }
    // Whether a message from `source` has begun to arrive here: one being received, or one that
    // waits to be (any thread may ask; it takes nothing).
    virtual bool pending_from(int /*source*/) { return false; }

    // The messages sent (posted) and received so far, of the tags `counted` accepts (empty: all).
    // Kept by tag with relaxed atomics: the counting costs next to nothing, and any thread may ask.
    TrafficCounts traffic(const std::function<bool(int tag)>& counted = {}) const;

protected:
    void count_sent(int tag, size_t bytes) { count(sent_, tag, bytes); }
    void count_received(int tag, size_t bytes) { count(received_, tag, bytes); }

private:
    static constexpr int kCountedTags = 32;  // tags above share the last slot
    struct PerTag {
        std::array<std::atomic<int64_t>, kCountedTags> messages{}, bytes{};
    };
    static void count(PerTag& c, int tag, size_t bytes) {
        const size_t slot = static_cast<size_t>(tag < 0 ? 0 : tag < kCountedTags ? tag : kCountedTags - 1);
        c.messages[slot].fetch_add(1, std::memory_order_relaxed);
        c.bytes[slot].fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    }
    PerTag sent_, received_;
};

inline TrafficCounts Transport::traffic(const std::function<bool(int tag)>& counted) const {
    TrafficCounts c;
    for (int tag = 0; tag < kCountedTags; ++tag) {
        if (counted && !counted(tag)) continue;
        const auto i = static_cast<size_t>(tag);
        c.sent_messages += sent_.messages[i].load(std::memory_order_relaxed);
        c.sent_bytes += sent_.bytes[i].load(std::memory_order_relaxed);
        c.received_messages += received_.messages[i].load(std::memory_order_relaxed);
        c.received_bytes += received_.bytes[i].load(std::memory_order_relaxed);
    }
    return c;
}

}  // namespace rudra::dist
