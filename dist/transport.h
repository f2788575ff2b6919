// Point-to-point messages between ranks. Two implementations: MPI (the real one) and an
// in-process hub used by unit tests of the protocol logic.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rudra::dist {

constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;

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
};

}  // namespace rudra::dist
