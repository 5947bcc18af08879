// runtime::compact_strand: a strand (never two of its functions at once,
// through any number of copies and type-erased wrappers), small enough for
// any_io_executor's buffer, alive as long as a copy is, and a tracked copy
// counts as work.
#include "runtime/compact_strand.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

namespace dstream::runtime {
namespace {

namespace asio = boost::asio;

TEST(CompactStrand, IsOnePointerWide) {
    // any_io_executor keeps an executor of up to two pointers in place.
    EXPECT_EQ(sizeof(compact_strand), sizeof(void*));
    EXPECT_EQ(sizeof(basic_compact_strand<true>), sizeof(void*));
}

TEST(CompactStrand, NeverRunsTwoOfItsFunctionsAtOnce) {
    asio::io_context io(2);
    const compact_strand strand(io);
    constexpr int count = 20000;
    int total = 0;  // not atomic: the strand is what orders the increments
    std::atomic<int> inside{0};
    std::atomic<bool> overlapped{false};
    std::atomic<int> busy{0};
    for (int i = 0; i < count; ++i) {
        // Half through the erased type every asynchronous operation uses.
        const auto work = [&] {
            if (inside.fetch_add(1) != 0) overlapped = true;
            ++total;
            // Long enough that two threads running them unordered would overlap.
            for (int k = 0; k < 500; ++k) busy.fetch_add(1, std::memory_order_relaxed);
            inside.fetch_sub(1);
        };
        if (i % 2 == 0) {
            asio::post(strand, work);
        } else {
            asio::post(asio::any_io_executor(strand), work);
        }
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) threads.emplace_back([&] { io.run(); });
    for (auto& t : threads) t.join();
    EXPECT_EQ(total, count);
    EXPECT_FALSE(overlapped);
}

TEST(CompactStrand, APostFromInsideWaitsAndADispatchRunsAtOnce) {
    asio::io_context io;
    const compact_strand strand(io);
    std::vector<int> order;
    asio::post(strand, [&] {
        EXPECT_TRUE(strand.running_in_this_thread());
        asio::post(asio::any_io_executor(strand), [&] { order.push_back(3); });
        asio::dispatch(asio::any_io_executor(strand), [&] { order.push_back(1); });
        order.push_back(2);
    });
    io.run();
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
    EXPECT_FALSE(strand.running_in_this_thread());
}

TEST(CompactStrand, AQueuedCopyKeepsTheStrandAlive) {
    asio::io_context io;
    bool ran = false;
    {
        const compact_strand strand(io);
        const asio::any_io_executor erased(strand);
        asio::post(erased, [&] { ran = true; });
    }
    io.run();  // the original and its wrapper are gone; the queued copy is not
    EXPECT_TRUE(ran);
}

// A coroutine parked on a slot has only its handler's tracked executor to
// keep the context running.
TEST(CompactStrand, ATrackedCopyKeepsTheContextRunning) {
    asio::io_context io;
    const compact_strand strand(io);
    std::optional<asio::any_io_executor> work(
        asio::prefer(asio::any_io_executor(strand), asio::execution::outstanding_work.tracked));
    EXPECT_EQ(asio::query(*work, asio::execution::outstanding_work),
              asio::execution::outstanding_work.tracked);
    std::atomic<bool> returned{false};
    std::thread runner([&] {
        io.run();
        returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(returned) << "run() must wait while tracked work is held";
    asio::post(strand, [&] { work.reset(); });
    runner.join();
    EXPECT_TRUE(returned);
}

TEST(CompactStrand, CopiesAreEqualAndStrandsAreNot) {
    asio::io_context io;
    const compact_strand a(io);
    const compact_strand b(io);
    const compact_strand a_copy = a;
    EXPECT_EQ(a, a_copy);
    EXPECT_NE(a, b);
    EXPECT_EQ(asio::any_io_executor(a), asio::any_io_executor(a_copy));
    EXPECT_EQ(&asio::query(a, asio::execution::context), &io);
}

}  // namespace
}  // namespace dstream::runtime
