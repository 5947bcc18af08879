// runtime::async_slot: a value handed from another thread to a coroutine
// waiting on its own executor, delivered before or after the coroutine
// waits, a slot whose deliverer goes away without delivering, and the
// executor the coroutine wakes on.
#include "runtime/async_slot.h"

#include <memory>
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
using slot_ptr = std::shared_ptr<async_slot<std::string>>;

// Counts its destruction, to see a parked coroutine's frame freed.
struct frame_witness {
    int* destroyed;
    ~frame_witness() { ++*destroyed; }
};

asio::awaitable<void> wait_for(slot_ptr slot, std::string* got, int* destroyed) {
    const frame_witness witness{destroyed};
    *got = co_await take(std::move(slot));
}

TEST(AsyncSlot, ValueDeliveredBeforeTheCoroutineWaits) {
    asio::io_context io;
    auto slot = std::make_shared<async_slot<std::string>>();
    slot->deliver("early");
    std::string got;
    int destroyed = 0;
    asio::co_spawn(io, wait_for(slot, &got, &destroyed), asio::detached);
    slot.reset();
    io.run();
    EXPECT_EQ(got, "early");
    EXPECT_EQ(destroyed, 1);
}

TEST(AsyncSlot, ValueDeliveredFromAnotherThreadWhileTheCoroutineWaits) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    auto slot = std::make_shared<async_slot<std::string>>();
    std::string got;
    int destroyed = 0;
    asio::co_spawn(io, wait_for(slot, &got, &destroyed), [&](std::exception_ptr) { work.reset(); });
    std::weak_ptr<async_slot<std::string>> watch = slot;
    std::thread deliverer;
    // Deliver once the coroutine has parked: it then holds no reference.
    asio::post(io, [&, slot = std::move(slot)]() mutable {
        deliverer = std::thread([s = std::move(slot)] { s->deliver("late"); });
    });
    io.run();
    deliverer.join();
    EXPECT_EQ(got, "late");
    EXPECT_EQ(destroyed, 1);
    EXPECT_TRUE(watch.expired());
}

TEST(AsyncSlot, ASlotDroppedUndeliveredFreesTheWaitingCoroutine) {
    asio::io_context io;
    auto slot = std::make_shared<async_slot<std::string>>();
    std::weak_ptr<async_slot<std::string>> watch = slot;
    auto deliver = slot->completion();
    std::string got = "unchanged";
    int destroyed = 0;
    asio::co_spawn(io, wait_for(std::move(slot), &got, &destroyed), asio::detached);
    io.poll();  // the coroutine parks (its handler keeps the context's work count up)
    EXPECT_FALSE(watch.expired()) << "the deliverer keeps the slot";
    EXPECT_EQ(destroyed, 0);
    { [[maybe_unused]] auto dropped = std::move(deliver); }
    EXPECT_TRUE(watch.expired()) << "the parked coroutine does not keep its slot alive";
    io.restart();
    io.run();  // the coroutine's frames are unwound through its executor, and no work is left
    EXPECT_EQ(destroyed, 1);
    EXPECT_EQ(got, "unchanged");
}

// A value delivered on another thread wakes the coroutine on the executor it
// runs on (here a strand, with two threads running the context).
TEST(AsyncSlot, TheCoroutineResumesOnItsOwnExecutor) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    const auto strand = asio::make_strand(io);
    auto slot = std::make_shared<async_slot<std::string>>();
    auto deliver = slot->completion();
    bool on_strand = false;
    asio::co_spawn(
        strand,
        [&, slot = std::move(slot)]() mutable -> asio::awaitable<void> {
            std::string value = co_await take(std::move(slot));
            on_strand = strand.running_in_this_thread() && value == "late";
        },
        [&](std::exception_ptr) { work.reset(); });
    std::thread other([&] { io.run(); });
    asio::post(io, [&] { deliver("late"); });
    io.run();
    other.join();
    EXPECT_TRUE(on_strand);
}

}  // namespace
}  // namespace dstream::runtime
