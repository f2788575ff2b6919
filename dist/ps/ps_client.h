// The learner's side of the parameter server's protocol (dist/transport/messages.h) over a Transport:
// pull the weights with a timestamp, push a gradient with the timestamp it was computed from,
// and say goodbye. pull() and push() keep separate buffers, so one thread may pull while another
// pushes; each is called by one thread at a time.
#pragma once
#include <cstdint>
#include <vector>

#include "dist/transport/transport.h"
#include "dist/transport/wire.h"

namespace rudra::dist {

// A gradient packed for the wire, so that the compute loop can go on with the next one while it
// is sent.
class GradientMessage {
public:
    explicit GradientMessage(Wire wire = Wire::Fp32) : wire_(wire) {}
    void pack(int64_t ts, double loss, const float* gradient, size_t floats);
    const std::vector<char>& bytes() const { return bytes_; }

private:
    Wire wire_;
    std::vector<char> bytes_;
};

class PsClient {
public:
    PsClient(Transport& transport, int ps_rank, size_t param_floats, Wire wire = Wire::Fp32);

    struct Pulled {
        bool stop = false;    // training is over: the PS sends nothing more
        int64_t ts = -1;      // the PS's timestamp
        bool fresh = false;   // `weights` received the weights of `ts` (newer than asked)
    };
    // Asks for weights newer than `have_ts`, answered once the PS has reached `min_ts`
    // (hardsync's next timestamp; 0 otherwise). Blocks until the answer.
    Pulled pull(int64_t have_ts, int64_t min_ts, float* weights);
    void push(const GradientMessage& gradient);
    // The learner's last message to the PS.
    void bye();

private:
    Transport& t_;
    int ps_;
    size_t floats_;
    Wire wire_;
    std::vector<char> in_;
};

}  // namespace rudra::dist
