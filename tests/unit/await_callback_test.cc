// runtime::await_callback: a value handed to a waiting coroutine through a
// callback, from inside the start or from another thread, a callback
// dropped without being called, and the executor the coroutine wakes on.
#include "runtime/await_callback.h"

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <gtest/gtest.h>

namespace dstream::runtime {
namespace {

namespace asio = boost::asio;
using deliver_string = deliver_fn<std::string>;

// Counts its destruction, to see a waiting coroutine's frame freed.
struct frame_witness {
    int* destroyed;
    ~frame_witness() { ++*destroyed; }
};

// Hands `done` to `*parked`, then says so in `*waiting` (a plain function,
// as await_callback asks).
asio::awaitable<std::string> park_in(std::optional<deliver_string>* parked,
                                     std::atomic<bool>* waiting = nullptr) {
    return await_callback<std::string>([parked, waiting](deliver_string done) {
        parked->emplace(std::move(done));
        if (waiting != nullptr) waiting->store(true);
    });
}

asio::awaitable<void> wait_for(std::optional<deliver_string>* parked, std::string* got,
                               int* destroyed) {
    const frame_witness witness{destroyed};
    *got = co_await park_in(parked);
}

asio::awaitable<std::string> answered_at_once() {
    return await_callback<std::string>([](deliver_string done) { done("at once"); });
}

TEST(AwaitCallback, AValueGivenInsideTheStartResumesTheCoroutine) {
    asio::io_context io;
    std::string got;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { got = co_await answered_at_once(); }, asio::detached);
    io.run();
    EXPECT_EQ(got, "at once");
}

TEST(AwaitCallback, AValueGivenFromAnotherThreadResumesTheCoroutine) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::optional<deliver_string> parked;
    std::string got;
    int destroyed = 0;
    asio::co_spawn(io, wait_for(&parked, &got, &destroyed),
                   [&](std::exception_ptr) { work.reset(); });
    io.poll();  // the coroutine waits; its handler is in `parked`
    ASSERT_TRUE(parked.has_value());
    EXPECT_EQ(destroyed, 0);
    std::thread deliverer([done = std::move(*parked)]() mutable { done("late"); });
    io.run();
    deliverer.join();
    EXPECT_EQ(got, "late");
    EXPECT_EQ(destroyed, 1);
}

TEST(AwaitCallback, ACallbackDroppedUncalledFreesTheWaitingCoroutine) {
    asio::io_context io;
    std::optional<deliver_string> parked;
    std::string got = "unchanged";
    int destroyed = 0;
    asio::co_spawn(io, wait_for(&parked, &got, &destroyed), asio::detached);
    io.poll();
    ASSERT_TRUE(parked.has_value());
    EXPECT_EQ(destroyed, 0);
    parked.reset();  // work dropped at shutdown
    io.restart();
    io.run();  // the coroutine's frames are unwound, and no work is left
    EXPECT_EQ(destroyed, 1);
    EXPECT_EQ(got, "unchanged");
}

// A value given on another thread wakes the coroutine on the executor it
// runs on (here a strand, with two threads running the context).
TEST(AwaitCallback, TheCoroutineResumesOnItsOwnExecutor) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    const auto strand = asio::make_strand(io);
    std::optional<deliver_string> parked;
    std::atomic<bool> waiting{false};
    bool on_strand = false;
    asio::co_spawn(
        strand,
        [&]() -> asio::awaitable<void> {
            std::string value = co_await park_in(&parked, &waiting);
            on_strand = strand.running_in_this_thread() && value == "late";
        },
        [&](std::exception_ptr) { work.reset(); });
    std::thread other([&] { io.run(); });
    while (!waiting.load()) std::this_thread::yield();
    (*parked)("late");  // from this thread, which runs no handler yet
    io.run();
    other.join();
    EXPECT_TRUE(on_strand);
}

}  // namespace
}  // namespace dstream::runtime
