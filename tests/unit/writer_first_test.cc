// A writer's answer never queues behind the live readers its write wakes:
// the group answers the proposer before it hands the change to the readers
// (issue: a writer's append with 1000 SSE readers waited for the fan-out).
#include <chrono>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "cli/node_logs.h"
#include "run_to_end.h"
#include "service/engine.h"
#include "service/live_subscription.h"
#include "service/live_update.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class WriterFirst : public ::testing::Test {
protected:
    WriterFirst() : streams(io, 1, cold_tier{}, checkpointing{}) {
        streams.attach_logs(cli::memory_logs(io.get_executor()));
        streams.start();
        state::create_stream c;
        c.key = key;
        c.content_type = "text/plain";
        state::command_body cmd = std::move(c);
        incarnation = test::run_to_end(io, streams.write(cmd)).incarnation.value();
    }

    read_request at_tail() const {
        read_request r;
        r.key = key;
        r.start = {protocol::read_start::kind::position, 0};
        r.max_bytes = 1 << 20;
        r.if_incarnation = incarnation;
        return r;
    }

    asio::awaitable<void> append(std::string body) {
        state::append a;
        a.key = key;
        a.content_type = "text/plain";
        a.body = std::move(body);
        state::command_body cmd = std::move(a);
        (void)co_await streams.write(cmd);
        order.push_back("writer");
    }

    // Runs until `count` events happened (one thread, as a core runs them).
    void run_until(std::size_t count) {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (order.size() < count && std::chrono::steady_clock::now() < until) {
            io.run_one_for(50ms);
        }
        ASSERT_EQ(order.size(), count);
    }

    asio::io_context io;
    engine streams;
    const std::string key = "bucket/writer-first";
    std::uint64_t incarnation = 0;
    std::vector<std::string> order;
};

TEST_F(WriterFirst, TheProposerIsAnsweredBeforeItsStreamsSseReadersAreWoken) {
    std::vector<std::shared_ptr<live_subscription>> subs;
    for (int i = 0; i < 20; ++i) {
        subs.push_back(streams.follow(at_tail(), io.get_executor(), std::chrono::steady_clock::now() + 60s));
    }
    io.poll();  // the registrations reach the group
    for (auto& s : subs) {
        asio::co_spawn(
            io,
            [](std::shared_ptr<live_subscription> sub, std::vector<std::string>& out)
                -> asio::awaitable<void> {
                auto update = co_await sub->next();
                out.push_back(update ? "reader" : "ended");
            }(s, order),
            asio::detached);
    }
    io.poll();  // the readers park
    asio::co_spawn(io, append("x"), asio::detached);
    run_until(21);
    EXPECT_EQ(order.front(), "writer");
    for (std::size_t i = 1; i < order.size(); ++i) EXPECT_EQ(order[i], "reader");
    for (auto& s : subs) s->end();
}

TEST_F(WriterFirst, TheProposerIsAnsweredBeforeItsStreamsLongPollsAreWoken) {
    for (int i = 0; i < 20; ++i) {
        asio::co_spawn(
            io,
            [](engine& e, read_request r, std::vector<std::string>& out) -> asio::awaitable<void> {
                auto update = co_await e.wait(r, std::chrono::steady_clock::now() + 60s);
                out.push_back(update ? "reader" : "timeout");
            }(streams, at_tail(), order),
            asio::detached);
    }
    io.poll();  // the watches reach the group
    asio::co_spawn(io, append("x"), asio::detached);
    run_until(21);
    EXPECT_EQ(order.front(), "writer");
    for (std::size_t i = 1; i < order.size(); ++i) EXPECT_EQ(order[i], "reader");
}

}  // namespace
}  // namespace dstream::service
