#include "dist/ps/weight_broadcast.h"

#include <utility>

#include "dist/transport/messages.h"

namespace rudra::dist {

int forward_to(Transport& t, const std::vector<int>& children, std::vector<char>& bytes,
               const std::function<bool(int)>& alive, std::vector<char>& lost,
               PostedBuffers& posted, const std::function<void(const std::string&)>& log) {
    lost.resize(children.size(), 0);
    int took = 0;
    for (size_t i = 0; i < children.size(); ++i) {
        if (lost[i]) continue;
        const int child = children[i];
        bool sent = false;
        try {
            sent = t.send_while(child, kBroadcastWeights, bytes.data(), bytes.size(), [&] { return alive(child); });
        } catch (const PeerError& e) {
            if (log) log(std::string("broadcast: ") + e.what());
        }
        if (sent) {
            ++took;
            continue;
        }
        lost[i] = 1;
        if (log) log("broadcast: rank " + std::to_string(child) + " did not take the weights; it is left out");
        posted.keep_copying(bytes);
    }
    return took;
}

BroadcastSender::BroadcastSender(Transport& t, std::vector<int> children, std::function<bool(int)> alive,
                                 Timeline* timeline, std::function<void(const std::string&)> log)
    : t_(t),
      children_(std::move(children)),
      alive_(std::move(alive)),
      log_(std::move(log)),
      thread_(
          [this](std::vector<char>& bytes, const std::function<bool()>& quitting, PostedBuffers& posted) {
              forward_to(
                  t_, children_, bytes, [&](int child) { return !quitting() && alive_(child); }, lost_, posted, log_);
          },
          timeline, "broadcast weights") {}

}  // namespace rudra::dist
