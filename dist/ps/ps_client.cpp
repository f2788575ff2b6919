#include "dist/ps/ps_client.h"

#include "dist/transport/messages.h"

namespace rudra::dist {

void GradientMessage::pack(int64_t ts, double loss, const float* gradient, size_t floats) {
    dist::pack(bytes_, GradientHeader{ts, loss}, gradient, floats, wire_);
}

PsClient::PsClient(Transport& transport, int ps_rank, size_t param_floats, Wire wire)
    : t_(transport), ps_(ps_rank), floats_(param_floats), wire_(wire) {
    in_.reserve(sizeof(WeightsReply) + wire_bytes(wire_, floats_));
}

PsClient::Pulled PsClient::pull(int64_t have_ts, int64_t min_ts, float* weights) {
    const WeightsRequest req{have_ts, min_ts};
    t_.send(ps_, kWeightsRequest, &req, sizeof req);
    t_.recv(ps_, kWeightsReply, in_);
    Pulled p;
    const auto reply = unpack_header<WeightsReply>(in_);
    if (reply.stop) {
        p.stop = true;
        return p;
    }
    p.ts = reply.ts;
    p.fresh = reply.has_weights != 0;
    if (p.fresh) unpack_floats<WeightsReply>(in_, weights, floats_, wire_);
    return p;
}

void PsClient::push(const GradientMessage& gradient) {
    t_.send(ps_, kGradient, gradient.bytes().data(), gradient.bytes().size());
}

void PsClient::bye() { t_.send(ps_, kBye, nullptr, 0); }

}  // namespace rudra::dist
