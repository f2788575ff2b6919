// adv*'s weight broadcast (dist/ps/topology.h): the root PS hands each new version of the weights to
// a BroadcastSender, which sends it to the first learners of the broadcast tree on a thread of
// its own while the PS goes on taking gradients; each learner's receiving thread forwards what
// it receives to its own children before the learner takes it (dist/ps/learner.cpp). Messages are
// kBroadcastWeights: a WeightsReply header with the weights; the run's stop (stop set, no weights)
// the root sends to every learner itself, so that a lost learner never keeps it from the others.
// Point-to-point forwarding, one version at a time: a version that comes while the previous one
// is still on its way is not sent; the next one sent is the newest.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "dist/transport/send_thread.h"
#include "dist/transport/transport.h"

namespace rudra::dist {

class Timeline;

// Sends `bytes` to each of `children` in turn; a child that does not take it while `alive(child)`
// holds is marked in `lost`, left out of later sends and logged (its send stays posted: `posted`
// keeps the buffer and `bytes` goes on as a copy). Returns the children that took it.
int forward_to(Transport& t, const std::vector<int>& children, std::vector<char>& bytes,
               const std::function<bool(int)>& alive, std::vector<char>& lost, PostedBuffers& posted,
               const std::function<void(const std::string&)>& log);

// The root's side: each version to the first learners of the tree, on a thread of its own.
class BroadcastSender {
public:
    BroadcastSender(Transport& t, std::vector<int> children, std::function<bool(int)> alive, Timeline* timeline,
                    std::function<void(const std::string&)> log);

    bool idle() { return thread_.idle(); }  // rethrows a failure of the sending thread
    // Swaps `filled` with the version sent before and sends it; call only when idle().
    void send(std::vector<char>& filled) { thread_.send(filled); }

private:
    Transport& t_;
    std::vector<int> children_;
    std::function<bool(int)> alive_;
    std::function<void(const std::string&)> log_;
    std::vector<char> lost_;  // by child; the thread's own
    SendThread thread_;       // last: its thread ends before the members above go
};

}  // namespace rudra::dist
