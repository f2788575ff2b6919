// adv*'s weight broadcast (dist/topology.h): the root PS hands each new version of the weights to
// a BroadcastSender, which sends it to the first learners of the broadcast tree on a thread of
// its own while the PS goes on taking gradients; each learner's receiving thread forwards what
// it receives to its own children before the learner takes it (dist/learner.cpp). Messages are
// kBroadcastWeights: a WeightsReply header with the weights; the run's stop (stop set, no weights)
// the root sends to every learner itself, so that a lost learner never keeps it from the others.
// Point-to-point forwarding, one version at a time: a version that comes while the previous one
// is still on its way is not sent; the next one sent is the newest.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/transport.h"

namespace rudra::dist {

class Timeline;

// Sends `bytes` to each of `children` in turn; a child that does not take it while `alive(child)`
// holds is left out of later sends (and logged). Returns the children that took it.
int forward_to(Transport& t, const std::vector<int>& children, std::vector<char>& bytes,
               const std::function<bool(int)>& alive, std::vector<char>& lost,
               std::vector<std::vector<char>>& abandoned, const std::function<void(const std::string&)>& log);

class BroadcastSender {
public:
    BroadcastSender(Transport& t, std::vector<int> children, std::function<bool(int)> alive, Timeline* timeline,
                    std::function<void(const std::string&)> log);
    ~BroadcastSender();
    BroadcastSender(const BroadcastSender&) = delete;
    BroadcastSender& operator=(const BroadcastSender&) = delete;

    bool idle();  // rethrows a failure of the sending thread
    // The next message, to be filled while idle(), then sent by send().
    std::vector<char>& next() { return next_; }
    void send();

private:
    void run();
    Transport& t_;
    std::vector<int> children_;
    std::function<bool(int)> alive_;
    Timeline* timeline_;
    std::function<void(const std::string&)> log_;
    std::vector<char> next_, sending_, lost_;
    std::vector<std::vector<char>> abandoned_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool pending_ = false, quit_ = false;
    std::exception_ptr error_;
    std::thread thread_;
};

}  // namespace rudra::dist
