#include "service/live_subscription.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "run_to_end.h"

namespace dstream::service {
namespace {

using namespace std::chrono_literals;
using update_ptr = std::shared_ptr<const live_update>;
constexpr auto kept = live_subscription::offered::kept;

update_ptr update_to(std::uint64_t next) {
    stream_view v;
    v.next = next;
    v.tail = next;
    return std::make_shared<const live_update>(std::move(v));
}

update_ptr next_of(boost::asio::io_context& io, live_subscription& s) {
    return test::run_to_end(io, s.next());
}

std::shared_ptr<live_subscription> subscribe(boost::asio::io_context& io,
                                             std::chrono::milliseconds lifetime = 20'000ms) {
    auto s = std::make_shared<live_subscription>(io.get_executor(),
                                                 std::chrono::steady_clock::now() + lifetime);
    s->start();
    return s;
}

TEST(LiveSubscription, UpdatesComeInOrderOfferedAndItEndsAtItsDeadline) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    const auto start = std::chrono::steady_clock::now();
    auto s = subscribe(io, 100ms);
    EXPECT_EQ(s->offer(update_to(1)), kept);
    EXPECT_EQ(s->offer(update_to(2)), kept);
    EXPECT_EQ(next_of(io, *s)->view().next, 1u);
    EXPECT_EQ(next_of(io, *s)->view().next, 2u);
    EXPECT_EQ(next_of(io, *s), nullptr);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
    EXPECT_TRUE(s->ended());
    EXPECT_EQ(s->offer(update_to(3)), live_subscription::offered::ended);
}

TEST(LiveSubscription, QueuedUpdatesAreTakenWithoutWaiting) {
    boost::asio::io_context io;
    auto s = subscribe(io);
    EXPECT_EQ(s->take_queued(), nullptr);
    EXPECT_FALSE(s->has_queued());
    EXPECT_EQ(s->offer(update_to(5)), kept);
    EXPECT_TRUE(s->has_queued());
    EXPECT_EQ(s->take_queued()->view().next, 5u);
    EXPECT_FALSE(s->has_queued());
    s->end();
}

TEST(LiveSubscription, AnOfferFromAnotherThreadWakesTheWaitingReader) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    auto s = subscribe(io);
    std::thread group([s] {
        std::this_thread::sleep_for(30ms);
        s->offer(update_to(7));
    });
    const auto start = std::chrono::steady_clock::now();
    const update_ptr got = next_of(io, *s);
    group.join();
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->view().next, 7u);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2000ms);
}

TEST(LiveSubscription, AnEndedSubscriptionDrainsItsQueueThenSaysNothing) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    auto s = subscribe(io);
    EXPECT_EQ(s->offer(update_to(3)), kept);
    s->end();
    EXPECT_EQ(s->offer(update_to(4)), live_subscription::offered::ended);
    EXPECT_TRUE(s->ended());
    EXPECT_EQ(next_of(io, *s)->view().next, 3u);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(next_of(io, *s), nullptr);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms)
        << "an ended subscription does not wait";
}

TEST(LiveSubscription, AReaderTooFarBehindIsEndedAndKeepsWhatWasQueued) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    auto s = subscribe(io);
    for (std::uint64_t i = 1; i <= live_subscription::max_queued; ++i)
        EXPECT_EQ(s->offer(update_to(i)), kept);
    EXPECT_EQ(s->offer(update_to(999)), live_subscription::offered::behind);
    EXPECT_TRUE(s->ended());
    for (std::uint64_t i = 1; i <= live_subscription::max_queued; ++i) {
        EXPECT_EQ(next_of(io, *s)->view().next, i);
    }
    EXPECT_EQ(next_of(io, *s), nullptr);
}

// A waiting reader is handed the update itself, and is freed when its
// subscription ends without one (the coroutine does not outlive it).
TEST(LiveSubscription, AnEndWakesTheWaitingReaderWithNothing) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);
    auto s = subscribe(io);
    std::optional<update_ptr> got;
    boost::asio::co_spawn(io, s->next(),
                          [&](std::exception_ptr, update_ptr u) { got = std::move(u); });
    io.poll();
    EXPECT_FALSE(got.has_value()) << "the reader waits";
    s->end();
    io.poll();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, nullptr);
}

// A sink that answers as told and records what it was given.
class scripted_sink final : public live_sink {
public:
    explicit scripted_sink(taken told) : answer(told) {}
    taken take(const update_ptr& update) override {
        given.push_back(update->view().next);
        if (during) during();
        return answer;
    }
    taken answer;
    std::vector<std::uint64_t> given;
    std::function<void()> during;
};

// A subscription whose sink answers `answer`, on an io_context run several times.
struct with_sink {
    explicit with_sink(live_sink::taken answer) : sink(answer) { s->set_sink(&sink); }
    boost::asio::io_context io;
    const boost::asio::executor_work_guard<boost::asio::io_context::executor_type> busy =
        boost::asio::make_work_guard(io);
    const std::shared_ptr<live_subscription> s = subscribe(io);
    scripted_sink sink;
};

// The reader parked in next(); `got` is set once it is resumed.
void park(boost::asio::io_context& io, live_subscription& s, std::optional<update_ptr>& got) {
    boost::asio::co_spawn(io, s.next(), [&](std::exception_ptr, update_ptr u) { got = std::move(u); });
    io.poll();
    ASSERT_FALSE(got.has_value()) << "the reader waits";
}

TEST(LiveSubscription, UpdatesASinkDeliversWholeLeaveTheReaderParked) {
    with_sink t(live_sink::taken::whole);
    auto& [io, busy, s, sink] = t;
    std::optional<update_ptr> got;
    park(io, *s, got);
    EXPECT_EQ(s->offer(update_to(1)), kept);
    EXPECT_EQ(s->offer(update_to(2)), kept);
    io.poll();
    EXPECT_FALSE(got.has_value()) << "nothing woke the reader";
    EXPECT_EQ(sink.given, (std::vector<std::uint64_t>{1, 2}));
    EXPECT_FALSE(s->has_queued());
    s->end();
    io.poll();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, nullptr);
}

TEST(LiveSubscription, AnUpdateTheSinkBeganOrDeclinedWakesTheReaderWithIt) {
    for (const auto answer : {live_sink::taken::part, live_sink::taken::no}) {
        with_sink t(answer);
        auto& [io, busy, s, sink] = t;
        std::optional<update_ptr> got;
        park(io, *s, got);
        EXPECT_EQ(s->offer(update_to(4)), kept);
        // The reader is not parked now: the next update waits in the queue
        // for it, in order, and is not given to the sink.
        EXPECT_EQ(s->offer(update_to(5)), kept);
        io.poll();
        ASSERT_TRUE(got.has_value());
        ASSERT_NE(*got, nullptr);
        EXPECT_EQ((*got)->view().next, 4u);
        EXPECT_EQ(sink.given, (std::vector<std::uint64_t>{4}));
        EXPECT_EQ(s->take_queued()->view().next, 5u);
        s->end();
    }
}

TEST(LiveSubscription, AnEndWhileTheSinkWritesWakesTheReaderAfterIt) {
    with_sink t(live_sink::taken::whole);
    auto& [io, busy, s, sink] = t;
    std::optional<update_ptr> got;
    std::thread deadline;
    sink.during = [&] {
        // The subscription's deadline, say, on another thread.
        deadline = std::thread([s] { s->end(); });
        std::this_thread::sleep_for(50ms);
        EXPECT_FALSE(s->ended()) << "the end waits for the sink";
    };
    park(io, *s, got);
    EXPECT_EQ(s->offer(update_to(9)), kept);
    deadline.join();
    io.poll();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, nullptr) << "told it ended; the update itself was delivered";
    EXPECT_TRUE(s->ended());
}

TEST(LiveSubscription, WithoutASinkOrAParkedReaderNothingIsGivenToTheSink) {
    with_sink t(live_sink::taken::whole);
    auto& [io, busy, s, sink] = t;
    EXPECT_EQ(s->offer(update_to(1)), kept);  // the reader is not parked: queued
    EXPECT_TRUE(sink.given.empty());
    EXPECT_EQ(s->take_queued()->view().next, 1u);
    s->set_sink(nullptr);
    std::optional<update_ptr> got;
    park(io, *s, got);
    EXPECT_EQ(s->offer(update_to(2)), kept);
    io.poll();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ((*got)->view().next, 2u);
    EXPECT_TRUE(sink.given.empty());
    s->end();
}

}  // namespace
}  // namespace dstream::service
