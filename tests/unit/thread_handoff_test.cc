// runtime/thread_handoff.h: what one I/O thread hands another during one
// pass of its queue arrives there together, in order, on the receiving
// thread; off the I/O threads, or to its own thread, work is posted at once.
#include "runtime/thread_handoff.h"

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "runtime/await_callback.h"
#include "runtime/compact_strand.h"
#include "runtime/io_threads.h"

namespace dstream::runtime {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// A handler that re-posts itself on `io` until `stop`, counting its runs:
// work that ran in one handler of `io` saw one count.
struct ticker {
    asio::io_context& io;
    int ticks = 0;
    bool stop = false;
    void start() {
        asio::post(io, [this] {
            ++ticks;
            if (!stop) start();
        });
    }
};

TEST(ThreadHandoff, WorkHandedInOnePassArrivesTogetherInOrder) {
    io_threads threads(2);
    asio::io_context& a = threads.contexts().of(0);
    asio::io_context& b = threads.contexts().of(1);
    ticker busy_b{b};
    busy_b.start();
    std::vector<int> order;
    std::vector<int> ticks_seen;
    std::vector<std::thread::id> ran_on;
    std::thread::id b_thread;
    asio::post(b, [&] { b_thread = std::this_thread::get_id(); });
    asio::post(a, [&] {
        // b runs its ticker meanwhile: posted one by one, each piece would
        // run beside different ticks.
        for (int i = 0; i < 3; ++i) {
            post_gathered(asio::bind_executor(b.get_executor(), [&, i] {
                order.push_back(i);
                ticks_seen.push_back(busy_b.ticks);
                ran_on.push_back(std::this_thread::get_id());
                if (i == 2) {
                    busy_b.stop = true;
                    threads.stop();
                }
            }));
            std::this_thread::sleep_for(5ms);
        }
    });
    threads.run();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    ASSERT_EQ(ticks_seen.size(), 3u);
    EXPECT_EQ(ticks_seen[0], ticks_seen[2]);
    EXPECT_GT(ticks_seen[0], 0);
    for (const auto& id : ran_on) EXPECT_EQ(id, b_thread);
}

TEST(ThreadHandoff, WorkForItsOwnThreadOrFromOutsideIsPostedAtOnce) {
    io_threads threads(2);
    asio::io_context& a = threads.contexts().of(0);
    std::promise<std::thread::id> own;
    std::promise<std::thread::id> from_outside;
    std::thread::id a_thread;
    asio::post(a, [&] {
        a_thread = std::this_thread::get_id();
        EXPECT_EQ(handoff_target(a), nullptr);
        post_gathered(asio::bind_executor(a.get_executor(),
                                          [&] { own.set_value(std::this_thread::get_id()); }));
    });
    std::thread outside([&] {
        EXPECT_EQ(handoff_target(a), nullptr);
        post_gathered(asio::bind_executor(
            a.get_executor(), [&] { from_outside.set_value(std::this_thread::get_id()); }));
    });
    std::shared_future<std::thread::id> own_ran = own.get_future().share();
    std::shared_future<std::thread::id> outside_ran = from_outside.get_future().share();
    std::thread stopper([&] {
        own_ran.wait();
        outside_ran.wait();
        threads.stop();
    });
    threads.run();
    outside.join();
    stopper.join();
    EXPECT_EQ(own_ran.get(), a_thread);
    EXPECT_EQ(outside_ran.get(), a_thread);
}

// A coroutine waiting in await_callback is resumed on its own thread when
// the value is delivered on another.
asio::awaitable<void> wait_for_other_thread(asio::io_context& other, std::thread::id& resumed_on,
                                            int& value, io_threads& threads) {
    value = co_await await_callback<int>([&other](deliver_fn<int> done) {
        asio::post(other, [done = std::move(done)]() mutable { done(42); });
    });
    resumed_on = std::this_thread::get_id();
    threads.stop();
}

TEST(ThreadHandoff, AnAwaitedValueResumesItsCoroutineOnItsOwnThread) {
    io_threads threads(2);
    asio::io_context& a = threads.contexts().of(0);
    asio::io_context& b = threads.contexts().of(1);
    std::thread::id a_thread;
    std::thread::id resumed_on;
    int value = 0;
    const compact_strand strand(a);
    asio::post(a, [&] { a_thread = std::this_thread::get_id(); });
    asio::co_spawn(strand, wait_for_other_thread(b, resumed_on, value, threads), asio::detached);
    threads.run();
    EXPECT_EQ(value, 42);
    EXPECT_EQ(resumed_on, a_thread);
}

TEST(ThreadHandoff, WorkStillGatheredWhenTheThreadsStopIsDropped) {
    auto held = std::make_shared<int>(0);
    {
        io_threads threads(2);
        asio::io_context& a = threads.contexts().of(0);
        asio::io_context& b = threads.contexts().of(1);
        asio::post(a, [&, held] {
            // Gathered, and the pass ends with the context stopped: the
            // flush never runs.
            post_gathered(asio::bind_executor(b.get_executor(), [held] { ++*held; }));
            threads.stop();
        });
        threads.run();
        EXPECT_EQ(held.use_count(), 1);
    }
    EXPECT_EQ(*held, 0);
}

}  // namespace
}  // namespace dstream::runtime
