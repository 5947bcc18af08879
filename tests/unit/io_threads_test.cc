// runtime::io_threads: one io_context per thread, each run by that thread
// alone, so that what is placed on one (a group, a connection) stays on its
// thread; a strand made there is that thread, with no queue of its own.
#include "runtime/io_threads.h"

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "runtime/compact_strand.h"

namespace dstream::runtime {
namespace {

namespace asio = boost::asio;

TEST(IoThreads, EachContextRunsOnOneThreadOfItsOwnUntilStopped) {
    io_threads threads(3);
    ASSERT_EQ(threads.contexts().size(), 3u);
    std::mutex mutex;
    std::vector<std::set<std::thread::id>> seen(3);
    std::atomic<int> left{3 * 200};
    for (int round = 0; round < 200; ++round) {
        for (std::size_t i = 0; i < 3; ++i) {
            asio::post(threads.contexts().of(i), [&, i] {
                {
                    std::lock_guard lock(mutex);
                    seen[i].insert(std::this_thread::get_id());
                }
                if (--left == 0) threads.stop();
            });
        }
    }
    // Returns only once stop() was called: a context with nothing to do yet
    // keeps its thread.
    threads.run();
    std::set<std::thread::id> all;
    for (const auto& s : seen) {
        ASSERT_EQ(s.size(), 1u);
        all.insert(*s.begin());
    }
    EXPECT_EQ(all.size(), 3u);
}

TEST(IoThreads, ItemsAreSpreadRoundRobinAndNodeWideWorkGoesToTheFirst) {
    io_threads threads(2);
    const io_contexts& io = threads.contexts();
    EXPECT_EQ(&io.of(0), &io.first());
    EXPECT_NE(&io.of(0), &io.of(1));
    EXPECT_EQ(&io.of(2), &io.of(0));
    EXPECT_EQ(&io.of(3), &io.of(1));
}

TEST(IoThreads, AnIdleContextStillTakesWorkPostedLater) {
    io_threads threads(2);
    std::promise<void> ran;
    std::thread late([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        asio::post(threads.contexts().of(1), [&] {
            ran.set_value();
            threads.stop();
        });
    });
    threads.run();
    late.join();
    EXPECT_NO_THROW(ran.get_future().get());
}

// On a one-thread context a strand is that thread: no queue and no lock of
// its own, and a post still waits its turn.
TEST(IoThreads, AStrandOnAOneThreadContextIsItsThread) {
    io_threads threads(1);
    const compact_strand a(threads.contexts().first());
    const compact_strand b(threads.contexts().first());
    bool inside_b = false;
    bool post_waited = false;
    asio::post(a, [&] {
        inside_b = b.running_in_this_thread();
        bool posted = false;
        asio::post(b, [&] {
            posted = true;
            threads.stop();
        });
        post_waited = !posted;
    });
    threads.run();
    EXPECT_TRUE(inside_b);
    EXPECT_TRUE(post_waited);
}

TEST(IoThreads, AStrandOfASharedContextIsAStrandOfItsOwn) {
    asio::io_context io(1);
    const compact_strand a(io);
    const compact_strand b(io);
    bool inside_b = true;
    asio::post(a, [&] { inside_b = b.running_in_this_thread(); });
    io.run();
    EXPECT_FALSE(inside_b);
}

}  // namespace
}  // namespace dstream::runtime
