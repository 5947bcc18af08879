// storage::byte_pipe: the bounded buffer between a store's streamed GET (a
// thread) and the coroutine that sends its bytes. The producer waits while
// the pipe is full and goes on once the consumer takes; bytes come out in
// order; a failure reaches the consumer after the bytes before it; a
// consumer that leaves stops the producer, a blocked one at once.
#include "storage/byte_pipe.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "run_to_end.h"
#include "runtime/await_callback.h"

namespace dstream::storage {
namespace {

using namespace std::chrono_literals;
using batch = byte_pipe::batch;

std::string joined(const batch& slices) {
    std::string out;
    for (const auto& s : slices) out.append(s.view());
    return out;
}

class BytePipe : public ::testing::Test {
protected:
    result<batch> take(byte_pipe& pipe) {
        return test::run_to_end(_io, runtime::await_callback<result<batch>>(
                                         [&pipe](runtime::deliver_fn<result<batch>> done) {
                                             pipe.take(std::move(done));
                                         }));
    }

private:
    boost::asio::io_context _io;
    // run_to_end runs the context one handler at a time: it must never run out of work.
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> _guard{
        _io.get_executor()};
};

TEST_F(BytePipe, AFullPipeHoldsTheProducerUntilTheConsumerTakes) {
    byte_pipe pipe(4);
    std::atomic<int> written{0};
    std::thread producer([&] {
        for (const char* piece : {"ab", "cd", "ef"}) {
            ASSERT_TRUE(pipe.write(piece));
            ++written;
        }
        pipe.finish();
    });
    // Four bytes wait: the third write blocks.
    while (written < 2) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(written, 2);
    auto first = take(pipe);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(joined(*first), "abcd");
    producer.join();
    EXPECT_EQ(written, 3);
    auto rest = take(pipe);
    ASSERT_TRUE(rest.ok());
    EXPECT_EQ(joined(*rest), "ef");
    auto end = take(pipe);
    ASSERT_TRUE(end.ok());
    EXPECT_TRUE(end->empty());
}

TEST_F(BytePipe, AConsumerWaitingIsWokenByTheFirstBytes) {
    byte_pipe pipe(1024);
    std::thread producer([&] {
        std::this_thread::sleep_for(30ms);
        pipe.write("late");
    });
    auto got = take(pipe);
    producer.join();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(joined(*got), "late");
}

TEST_F(BytePipe, ManyPiecesComeOutInOrderThroughASmallPipe) {
    byte_pipe pipe(64);
    std::string sent;
    for (int i = 0; i < 2000; ++i) sent += std::to_string(i) + ",";
    std::thread producer([&] {
        for (std::size_t at = 0; at < sent.size(); at += 7)
            ASSERT_TRUE(pipe.write(sent.substr(at, 7)));
        pipe.finish();
    });
    std::string received;
    for (;;) {
        auto got = take(pipe);
        ASSERT_TRUE(got.ok());
        if (got->empty()) break;
        EXPECT_LE(joined(*got).size(), 64u + 7u);
        received += joined(*got);
    }
    producer.join();
    EXPECT_EQ(received, sent);
}

TEST_F(BytePipe, ASliceLargerThanThePipeGoesInAloneWithoutACopy) {
    byte_pipe pipe(4);
    auto chunk = std::make_shared<const std::string>("0123456789");
    ASSERT_TRUE(pipe.push(byte_slice{chunk, chunk->data() + 2, 6}));
    auto got = take(pipe);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].data, chunk->data() + 2);
    EXPECT_EQ(joined(*got), "234567");
}

TEST_F(BytePipe, AFailureReachesTheConsumerAfterTheBytesBeforeIt) {
    byte_pipe pipe(1024);
    ASSERT_TRUE(pipe.write("ab"));
    pipe.fail(make_error(protocol::error_code::cold_backpressure, "the store gave up"));
    EXPECT_FALSE(pipe.write("never"));
    auto bytes = take(pipe);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(joined(*bytes), "ab");
    auto failed = take(pipe);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.err().code, protocol::error_code::cold_backpressure);
}

TEST_F(BytePipe, AConsumerThatLeavesStopsABlockedProducerAtOnce) {
    byte_pipe pipe(4);
    ASSERT_TRUE(pipe.write("abcd"));
    std::promise<bool> blocked_write;
    auto outcome = blocked_write.get_future();
    std::thread producer([&] { blocked_write.set_value(pipe.write("ef")); });
    EXPECT_EQ(outcome.wait_for(50ms), std::future_status::timeout);  // full: it waits
    EXPECT_FALSE(pipe.abandoned());
    pipe.abandon();
    ASSERT_EQ(outcome.wait_for(5s), std::future_status::ready);
    EXPECT_FALSE(outcome.get());
    producer.join();
    EXPECT_TRUE(pipe.abandoned());
    EXPECT_FALSE(pipe.write("gh"));
    EXPECT_FALSE(pipe.push(byte_slice{}));
}

}  // namespace
}  // namespace dstream::storage
