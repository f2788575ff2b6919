// Point-to-point messages between ranks. Two implementations: MPI (the real one) and an
// in-process hub used by unit tests of the protocol logic.
#pragma once
#include <cstddef>
#include <vector>

namespace rudra::dist {

constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;

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
    // Returns when `data` may be reused. Safe to call from several threads.
    virtual void send(int dest, int tag, const void* data, size_t bytes) = 0;
    // Blocks until a message from `source` with `tag` (or any) arrives; `buf` is resized to it.
    virtual Envelope recv(int source, int tag, std::vector<char>& buf) = 0;
    // Returns when every rank has called it (so that training starts together, not as each
    // rank finishes loading its data).
    virtual void barrier() = 0;
};

}  // namespace rudra::dist
