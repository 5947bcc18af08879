// A group offers its live readers the changes of a batch of committed
// commands once the batch is applied, but never lets a later command of the
// batch take bytes away first: a follower applies what its leader committed
// in one batch, and an SSE reader there saw a stream's delete without the
// append acknowledged just before it (cluster_http_blackbox, "a delete ends
// every waiting reader with an error event").
#include <chrono>
#include <memory>
#include <string>
#include <utility>
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

asio::awaitable<void> write(engine& streams, state::command_body cmd, int& answered) {
    (void)co_await streams.write(cmd);
    ++answered;
}

TEST(LiveBatch, AReaderGetsTheBytesOfAnAppendThatADeleteFollowsInTheSameBatch) {
    asio::io_context io;
    engine streams(io, 1, cold_tier{}, checkpointing{});
    streams.attach_logs(cli::memory_logs(io.get_executor()));
    streams.start();
    const std::string key = "bucket/append-then-delete";
    state::create_stream create;
    create.key = key;
    create.content_type = "text/plain";
    state::command_body created = std::move(create);
    const std::uint64_t incarnation = test::run_to_end(io, streams.write(created)).incarnation.value();

    read_request at_tail;
    at_tail.key = key;
    at_tail.start = {protocol::read_start::kind::position, 0};
    at_tail.max_bytes = 1 << 20;
    at_tail.if_incarnation = incarnation;
    auto reader = streams.follow(at_tail, io.get_executor(), std::chrono::steady_clock::now() + 60s);
    io.poll();  // the registration reaches the group

    // Both proposed before the group runs: one batch of the log.
    state::append append;
    append.key = key;
    append.content_type = "text/plain";
    append.body = "before";
    int answered = 0;
    asio::co_spawn(io, write(streams, std::move(append), answered), asio::detached);
    asio::co_spawn(io, write(streams, state::delete_stream{key, std::nullopt}, answered), asio::detached);
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (answered < 2 && std::chrono::steady_clock::now() < until) io.run_one_for(50ms);
    ASSERT_EQ(answered, 2);
    io.poll();

    std::vector<std::shared_ptr<const live_update>> updates;
    while (auto u = reader->take_queued()) updates.push_back(std::move(u));
    ASSERT_FALSE(updates.empty()) << "the reader was offered nothing";
    std::string data;
    for (const auto& u : updates) {
        if (u->view().refusal) break;
        for (const auto& piece : u->view().data) data += piece.view();
    }
    EXPECT_EQ(data, "before") << "the reader was offered the append before the delete";
    EXPECT_TRUE(updates.back()->view().refusal) << "and then the delete";
    reader->end();
}

}  // namespace
}  // namespace dstream::service
