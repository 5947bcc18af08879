#include "service/live_subscription.h"

#include <chrono>
#include <memory>
#include <thread>
#include <utility>

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

update_ptr next_of(boost::asio::io_context& io, live_subscription& s,
                   std::chrono::milliseconds within = 2000ms) {
    return test::run_to_end(io, s.next(std::chrono::steady_clock::now() + within));
}

TEST(LiveSubscription, UpdatesComeInOrderOfferedAndNothingAtTheDeadline) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    auto s = std::make_shared<live_subscription>(io.get_executor());
    EXPECT_EQ(s->offer(update_to(1)), kept);
    EXPECT_EQ(s->offer(update_to(2)), kept);
    EXPECT_EQ(next_of(io, *s)->view().next, 1u);
    EXPECT_EQ(next_of(io, *s)->view().next, 2u);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(next_of(io, *s, 50ms), nullptr);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
    EXPECT_FALSE(s->ended());
}

TEST(LiveSubscription, AnOfferFromAnotherThreadWakesTheWaitingReader) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    auto s = std::make_shared<live_subscription>(io.get_executor());
    std::thread group([s] {
        std::this_thread::sleep_for(30ms);
        s->offer(update_to(7));
    });
    const auto start = std::chrono::steady_clock::now();
    const update_ptr got = next_of(io, *s, 5000ms);
    group.join();
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->view().next, 7u);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2000ms);
}

TEST(LiveSubscription, AnEndedSubscriptionDrainsItsQueueThenSaysNothing) {
    boost::asio::io_context io;
    const auto busy = boost::asio::make_work_guard(io);  // several runs on one io_context
    auto s = std::make_shared<live_subscription>(io.get_executor());
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
    auto s = std::make_shared<live_subscription>(io.get_executor());
    for (std::uint64_t i = 1; i <= live_subscription::max_queued; ++i)
        EXPECT_EQ(s->offer(update_to(i)), kept);
    EXPECT_EQ(s->offer(update_to(999)), live_subscription::offered::behind);
    EXPECT_TRUE(s->ended());
    for (std::uint64_t i = 1; i <= live_subscription::max_queued; ++i) {
        EXPECT_EQ(next_of(io, *s)->view().next, i);
    }
    EXPECT_EQ(next_of(io, *s), nullptr);
}

}  // namespace
}  // namespace dstream::service
