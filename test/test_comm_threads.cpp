// The communication threads that let a rank go on working: ReceiveAhead (the PS receives the
// next message while it applies the last one) and SendThread (one message in flight on a thread
// of its own), on a scripted transport whose receives and sends the test controls.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/ps/receive_ahead.h"
#include "dist/transport/send_thread.h"

using namespace rudra::dist;
using namespace std::chrono_literals;

namespace {

// Receives what the test queues, in order; a queued failure is thrown by the receive that takes it.
class ScriptedTransport final : public Transport {
public:
    struct Item {
        int source = 0, tag = 0;
        std::string bytes;
        bool peer_error = false, other_error = false;
    };
    void queue(Item item) {
        std::lock_guard<std::mutex> lock(mu_);
        items_.push_back(std::move(item));
        cv_.notify_all();
    }
    int received() const { return received_.load(); }

    int rank() const override { return 0; }
    int size() const override { return 2; }
    bool send_while(int, int, const void*, size_t, const KeepWaiting&) override {
        throw std::logic_error("ScriptedTransport sends nothing");
    }
    std::optional<Envelope> recv_while(int, int, std::vector<char>& buf, const KeepWaiting& keep_waiting,
                                       const std::function<bool(int)>&) override {
        std::unique_lock<std::mutex> lock(mu_);
        while (items_.empty()) {
            if (keep_waiting && !keep_waiting()) return std::nullopt;
            cv_.wait_for(lock, 1ms);
        }
        Item item = std::move(items_.front());
        items_.pop_front();
        if (item.peer_error) throw PeerError(item.source, "rank " + std::to_string(item.source) + " died while sending");
        if (item.other_error) throw std::runtime_error("the transport broke");
        buf.assign(item.bytes.begin(), item.bytes.end());
        ++received_;
        return Envelope{item.source, item.tag, buf.size()};
    }
    bool barrier_while(const KeepWaiting&) override { return true; }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Item> items_;
    std::atomic<int> received_{0};
};

template <class F>
bool eventually(F&& f) {
    for (int i = 0; i < 2000; ++i) {
        if (f()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return f();
}

std::string text(const std::vector<char>& b) { return std::string(b.begin(), b.end()); }

}  // namespace

TEST_CASE("ReceiveAhead: messages in order, one received ahead while the owner handles the last") {
    ScriptedTransport t;
    std::vector<std::string> logged;
    std::mutex log_mu;
    ReceiveAhead ahead(t, [](int) { return true; }, [&](const std::string& s) {
        std::lock_guard<std::mutex> lock(log_mu);
        logged.push_back(s);
    });
    std::vector<char> buf;
    // Nothing there: none, once the owner stops waiting.
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(ahead.next(buf, [&] { return std::chrono::steady_clock::now() < t0 + 20ms; }).has_value());

    t.queue({2, 5, "first"});
    t.queue({3, 6, "second"});
    t.queue({4, 7, "third"});
    const auto a = ahead.next(buf, {});
    REQUIRE(a.has_value());
    CHECK(a->source == 2);
    CHECK(a->tag == 5);
    CHECK(a->bytes == 5);
    CHECK(text(buf) == "first");
    // While the owner holds "first", the thread takes "second", and no more.
    CHECK(eventually([&] { return t.received() == 2; }));
    std::this_thread::sleep_for(30ms);
    CHECK(t.received() == 2);
    const auto b = ahead.next(buf, {});
    REQUIRE(b.has_value());
    CHECK(b->source == 3);
    CHECK(text(buf) == "second");
    CHECK(eventually([&] { return t.received() == 3; }));

    // A sender that died while sending is no message: logged, and the next one comes.
    t.queue({5, 1, "", true, false});
    t.queue({6, 8, "fourth"});
    CHECK(ahead.next(buf, {})->source == 4);
    const auto d = ahead.next(buf, {});
    REQUIRE(d.has_value());
    CHECK(d->source == 6);
    CHECK(text(buf) == "fourth");
    {
        std::lock_guard<std::mutex> lock(log_mu);
        REQUIRE(logged.size() == 1);
        CHECK(logged[0] == "rank 5 died while sending");
    }
    // Any other failure reaches the owner.
    t.queue({7, 1, "", false, true});
    CHECK_THROWS_WITH(ahead.next(buf, {}), "the transport broke");
}

TEST_CASE("ReceiveAhead ends while its thread waits for a message, and while it holds one") {
    ScriptedTransport t;
    { ReceiveAhead idle(t, {}, {}); }  // waiting in a receive
    t.queue({2, 1, "unread"});
    {
        ReceiveAhead holding(t, {}, {});
        CHECK(eventually([&] { return t.received() == 1; }));
    }
    CHECK(t.received() == 1);
}

TEST_CASE("ReceiveAhead::stop ends the thread and keeps the message it took, for the owner to count") {
    ScriptedTransport t;
    ReceiveAhead ahead(t, {}, {});
    t.queue({3, 9, "last"});
    CHECK(eventually([&] { return t.received() == 1; }));
    ahead.stop();
    t.queue({4, 9, "after the stop"});
    std::vector<char> buf;
    const auto e = ahead.next(buf, [] { return false; });
    REQUIRE(e.has_value());
    CHECK(e->source == 3);
    CHECK(text(buf) == "last");
    CHECK_FALSE(ahead.next(buf, [] { return false; }).has_value());
    std::this_thread::sleep_for(20ms);
    CHECK(t.received() == 1);  // nothing is received after the stop
}

TEST_CASE("SendThread: one message in flight; the buffer sent before comes back to be filled") {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> sent;
    bool hold = false;  // the send in flight waits until the test lets it go
    SendThread thread(
        [&](std::vector<char>& bytes, const std::function<bool()>& quitting, PostedBuffers& posted) {
            std::unique_lock<std::mutex> lock(mu);
            while (hold && !quitting()) cv.wait_for(lock, 1ms);
            sent.push_back(text(bytes));
            if (quitting()) posted.keep(bytes);  // given up while posted
        },
        nullptr, "send");
    CHECK(thread.idle());
    std::vector<char> filled = {'a', 'b'};
    thread.send(filled);
    CHECK(filled.empty());  // nothing was sent before
    CHECK(eventually([&] { return thread.idle(); }));
    {
        std::lock_guard<std::mutex> lock(mu);
        CHECK(sent == std::vector<std::string>{"ab"});
        hold = true;
    }
    filled = {'c'};
    thread.send(filled);
    CHECK(text(filled) == "ab");  // the buffer sent before, to be filled again
    std::this_thread::sleep_for(20ms);
    CHECK_FALSE(thread.idle());  // held in flight
    {
        std::lock_guard<std::mutex> lock(mu);
        hold = false;
    }
    CHECK(eventually([&] { return thread.idle(); }));
    std::lock_guard<std::mutex> lock(mu);
    CHECK(sent == std::vector<std::string>{"ab", "c"});
}

TEST_CASE("SendThread: a failure of the thread reaches the owner; ending gives up a send in flight") {
    {
        SendThread failing([](std::vector<char>&, const std::function<bool()>&,
                              PostedBuffers&) { throw std::runtime_error("the peer is gone"); },
                           nullptr, "send");
        std::vector<char> filled = {'x'};
        failing.send(filled);
        CHECK_THROWS_WITH(eventually([&] { return failing.idle(); }), "the peer is gone");
    }
    std::atomic<bool> gave_up{false};
    {
        SendThread stuck(
            [&](std::vector<char>&, const std::function<bool()>& quitting, PostedBuffers&) {
                while (!quitting()) std::this_thread::sleep_for(1ms);
                gave_up = true;
            },
            nullptr, "send");
        std::vector<char> filled = {'y'};
        stuck.send(filled);
    }  // the destructor ends the send in flight
    CHECK(gave_up.load());
}

TEST_CASE("PostedBuffers: a buffer given up while posted is kept; the caller goes on with a copy or afresh") {
    PostedBuffers posted;
    std::vector<char> bytes = {'w', 'x'};
    const char* posted_data = bytes.data();
    posted.keep_copying(bytes);
    CHECK(text(bytes) == "wx");
    CHECK(bytes.data() != posted_data);  // a copy: the posted buffer is untouched
    posted.keep(bytes);
    CHECK(bytes.empty());
}
