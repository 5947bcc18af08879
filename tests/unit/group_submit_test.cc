// A write from a request's coroutine on its group's own thread is proposed
// at once (issue 22's run to completion on the owning thread): no lock and
// no post to the same thread. From another thread, or from work that is not
// a request's, it waits in the group's queue for the group's next turn.
//
// Told apart by order on the one thread: a write proposed at once has its
// log's write posted before work posted after the call, so its answer comes
// first; a queued write is proposed in a turn posted after that work.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "cli/node_logs.h"
#include "runtime/clock.h"
#include "runtime/compact_strand.h"
#include "runtime/fanout_lanes.h"
#include "runtime/random.h"
#include "service/group.h"

namespace dstream::service {
namespace {

using namespace std::chrono_literals;

class GroupSubmit : public ::testing::Test {
protected:
    GroupSubmit() {
        // What runtime::io_threads makes of each of its io_contexts.
        boost::asio::make_service<runtime::detail::one_thread_context>(io);
        g = std::make_unique<group>(0, group_strand(io), inputs);
        g->attach_log(cli::memory_logs(io.get_executor())(0, g->strand()));
        boost::asio::post(g->strand(), [this] { g->start(); });
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (!g->where().leads && std::chrono::steady_clock::now() < until) io.run_one_for(10ms);
        EXPECT_TRUE(g->where().leads);
    }

    state::command_body create(const std::string& key) {
        state::create_stream c;
        c.key = key;
        c.content_type = "text/plain";
        return c;
    }

    // What happened, in order, once `submit` has run in a handler of the
    // group's thread and the thread has nothing left to do.
    template <typename Submit>
    std::vector<std::string> order_of(Submit submit) {
        std::vector<std::string> seen;
        boost::asio::post(io, [&] {
            submit(create("s"), [&seen](state::apply_result r) {
                seen.push_back(r.refusal ? "refused" : "answered");
            });
            boost::asio::post(io, [&seen] { seen.push_back("posted after"); });
        });
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (seen.size() < 2 && std::chrono::steady_clock::now() < until) io.run_one_for(10ms);
        return seen;
    }

    boost::asio::io_context io;
    runtime::fanout_lanes lanes{runtime::io_contexts(io)};
    const group_inputs inputs{runtime::system_clock(), runtime::system_random(), lanes, cold_tier{},
                              checkpointing{}};
    std::unique_ptr<group> g;
};

TEST_F(GroupSubmit, ARequestOnTheGroupsThreadIsProposedAtOnce) {
    const auto seen = order_of([this](state::command_body&& body, write_done done) {
        g->submit_from_request(std::move(body), std::move(done));
    });
    EXPECT_EQ(seen, (std::vector<std::string>{"answered", "posted after"}));
}

TEST_F(GroupSubmit, OtherWorkWaitsForTheGroupsTurn) {
    const auto seen = order_of([this](state::command_body&& body, write_done done) {
        g->submit(std::move(body), std::move(done));
    });
    EXPECT_EQ(seen, (std::vector<std::string>{"posted after", "answered"}));
}

}  // namespace
}  // namespace dstream::service
