#include "service/live_readers.h"

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "run_to_end.h"
#include "service/service_metrics.h"

namespace dstream::service {
namespace {

using namespace std::chrono_literals;
using update_ptr = std::shared_ptr<const live_update>;

// A stream whose tail the test moves; every reader's next read is up to it.
class fake_stream final : public live_source {
public:
    std::uint64_t tail = 0;
    bool closed = false;
    bool shareable = true;
    int reads = 0;

    update_ptr live_answer(const read_request& request) override {
        ++reads;
        if (!shareable) return nullptr;
        stream_view v;
        v.start = request.start.position;
        v.next = tail;
        v.tail = tail;
        v.stream_closed = closed;
        return std::make_shared<const live_update>(std::move(v));
    }
};

read_request at(std::uint64_t position) {
    read_request r;
    r.key = "b/s";
    r.start = {protocol::read_start::kind::position, position};
    r.max_bytes = 1 << 20;
    r.if_incarnation = 1;
    return r;
}

std::shared_ptr<live_subscription> subscription(boost::asio::io_context& io) {
    auto s = std::make_shared<live_subscription>(io.get_executor(),
                                                 std::chrono::steady_clock::now() + 60s);
    s->start();
    return s;
}

// Every update a subscription got, in order, once `io` ran it all.
std::vector<std::uint64_t> taken(live_subscription& s) {
    std::vector<std::uint64_t> out;
    while (auto u = s.take_queued()) out.push_back(u->view().next);
    return out;
}

// Runs what is ready, without waiting for the subscriptions' deadlines.
void drain(boost::asio::io_context& io) {
    while (io.poll() > 0) {
    }
}

struct fixture {
    boost::asio::io_context io;
    // Runs may find nothing to do between steps: the io_context must not stop.
    const boost::asio::executor_work_guard<boost::asio::io_context::executor_type> busy =
        boost::asio::make_work_guard(io);
    // Three lanes, all run by the test's one thread.
    runtime::fanout_lanes lanes{runtime::io_contexts({&io, &io, &io})};
    fake_stream stream;
    live_readers readers{stream, lanes, service_metrics::get()};
};

TEST(LiveReaders, EveryFollowerGetsEveryChangeInOrderThroughTheLanes) {
    fixture f;
    std::vector<std::shared_ptr<live_subscription>> subs;
    for (int i = 0; i < 40; ++i) {
        subs.push_back(subscription(f.io));
        f.readers.follow(at(0), subs.back());
    }
    for (std::uint64_t change = 1; change <= 30; ++change) {
        f.stream.tail = change * 10;
        f.readers.changed("b/s");
    }
    // All readers read the same: one read per change, not one per reader.
    EXPECT_EQ(f.stream.reads, 30);
    // The lanes run on several threads, as the I/O threads do.
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) threads.emplace_back([&] { drain(f.io); });
    for (auto& t : threads) t.join();
    std::vector<std::uint64_t> expected;
    for (std::uint64_t change = 1; change <= 30; ++change) expected.push_back(change * 10);
    for (auto& s : subs) {
        EXPECT_EQ(taken(*s), expected);
        EXPECT_FALSE(s->ended());
    }
}

TEST(LiveReaders, AFewReadersAreHandedTheirUpdateAtOnceTheRestThroughTheLanes) {
    fixture f;
    std::vector<std::shared_ptr<live_subscription>> subs;
    for (std::size_t i = 0; i < live_readers::inline_readers + 4; ++i) {
        subs.push_back(subscription(f.io));
        f.readers.follow(at(0), subs.back());
    }
    f.stream.tail = 5;
    f.readers.changed("b/s");
    // Before the io runs: the first readers already hold it, the others not yet.
    for (std::size_t i = 0; i < subs.size(); ++i) {
        EXPECT_EQ(subs[i]->has_queued(), i < live_readers::inline_readers) << i;
    }
    drain(f.io);
    for (auto& s : subs) EXPECT_EQ(taken(*s), std::vector<std::uint64_t>{5});
}

TEST(LiveReaders, AClosedStreamEndsItsFollowersAfterTheirLastUpdate) {
    fixture f;
    std::vector<std::shared_ptr<live_subscription>> subs;
    for (int i = 0; i < 20; ++i) {
        subs.push_back(subscription(f.io));
        f.readers.follow(at(0), subs.back());
    }
    f.stream.tail = 3;
    f.stream.closed = true;
    f.readers.changed("b/s");
    drain(f.io);
    for (auto& s : subs) {
        EXPECT_EQ(taken(*s), std::vector<std::uint64_t>{3});
        EXPECT_TRUE(s->ended());
    }
    // They are gone: a later change reads nothing for them.
    const int reads = f.stream.reads;
    f.readers.changed("b/s");
    EXPECT_EQ(f.stream.reads, reads);
}

TEST(LiveReaders, AnUnshareableChangeEndsFollowersSoTheyReadForThemselves) {
    fixture f;
    auto near = subscription(f.io);
    f.readers.follow(at(0), near);
    std::vector<std::shared_ptr<live_subscription>> far;
    for (int i = 0; i < 20; ++i) {
        far.push_back(subscription(f.io));
        f.readers.follow(at(0), far.back());
    }
    f.stream.shareable = false;
    f.readers.changed("b/s");
    drain(f.io);
    EXPECT_TRUE(near->ended());
    for (auto& s : far) EXPECT_TRUE(s->ended());
}

TEST(LiveReaders, WatchesFireOnceWithTheSharedRead) {
    fixture f;
    using signal = live_signal;
    std::vector<std::shared_ptr<signal>> signals;
    for (int i = 0; i < 30; ++i) {
        signals.push_back(std::make_shared<signal>(f.io.get_executor(),
                                                   std::chrono::steady_clock::now() + 60s));
        f.readers.watch(at(0), signals.back());
    }
    f.stream.tail = 7;
    f.readers.changed("b/s");
    f.stream.tail = 9;
    f.readers.changed("b/s");  // no watch left: one-shot
    EXPECT_EQ(f.stream.reads, 1);
    for (auto& s : signals) {
        const update_ptr u = test::run_to_end(f.io, s->wait());
        ASSERT_TRUE(u);
        EXPECT_EQ(u->view().next, 7u);
    }
}

TEST(LiveReaders, StopWakesEveryReaderEmptyHanded) {
    fixture f;
    auto follower = subscription(f.io);
    f.readers.follow(at(0), follower);
    auto watch = std::make_shared<live_signal>(f.io.get_executor(),
                                               std::chrono::steady_clock::now() + 60s);
    f.readers.watch(at(0), watch);
    f.readers.stop();
    EXPECT_TRUE(f.readers.stopped());
    EXPECT_EQ(test::run_to_end(f.io, watch->wait()), nullptr);
    drain(f.io);
    EXPECT_TRUE(follower->ended());
    EXPECT_EQ(f.stream.reads, 0);
}

}  // namespace
}  // namespace dstream::service
