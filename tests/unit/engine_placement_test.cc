// The placement the edge routes by (extensions 5.7): each stream's group, and
// whether this node hosts it, leads it, and which leader of which term it
// knows; a group the node hosts no replica of refuses everything NO_LEADER
// instead of answering from a state it does not have.
#include <chrono>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "base/stable_hash.h"
#include "cli/node_logs.h"
#include "run_to_end.h"
#include "service/engine.h"

namespace dstream::service {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t group_count = 4;
constexpr std::size_t unhosted = 2;

// A key of group `g`.
std::string key_in(std::size_t g) {
    for (int i = 0;; ++i) {
        std::string key = "bucket/s" + std::to_string(i);
        if (stable_hash(key) % group_count == g) return key;
    }
}

class EnginePlacement : public ::testing::Test {
protected:
    EnginePlacement() : streams(io, group_count, cold_tier{}, checkpointing{}) {
        auto memory = cli::memory_logs(io.get_executor());
        streams.attach_logs([memory](std::size_t i, const group_strand& strand)
                                -> std::unique_ptr<log::group_log> {
            if (i == unhosted) return nullptr;
            return memory(i, strand);
        });
        streams.start();
        // The one-voter groups elect themselves.
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (!streams.place(key_in(0)).leads && std::chrono::steady_clock::now() < until) {
            io.run_one_for(10ms);
        }
    }

    state::apply_result create(const std::string& key) {
        state::create_stream c;
        c.key = key;
        c.content_type = "text/plain";
        state::command_body cmd = std::move(c);
        return test::run_to_end(io, streams.write(cmd));
    }

    boost::asio::io_context io;
    engine streams;
};

TEST_F(EnginePlacement, AHostedGroupNamesItselfAsItsLeaderWithItsTerm) {
    const placement p = streams.place(key_in(0));
    EXPECT_EQ(p.group, 0u);
    EXPECT_TRUE(p.hosted);
    EXPECT_TRUE(p.leads);
    EXPECT_EQ(p.leader, 1u);
    EXPECT_GE(p.term, 1u);
    EXPECT_EQ(streams.place(key_in(3)).group, 3u);
}

TEST_F(EnginePlacement, AGroupWithoutAReplicaHereIsNotHostedAndKnowsNoLeader) {
    const placement p = streams.place(key_in(unhosted));
    EXPECT_EQ(p.group, unhosted);
    EXPECT_FALSE(p.hosted);
    EXPECT_FALSE(p.leads);
    EXPECT_EQ(p.leader, 0u);
}

TEST_F(EnginePlacement, AGroupWithoutAReplicaHereRefusesWritesAndLeaderReadsNoLeader) {
    const state::apply_result w = create(key_in(unhosted));
    ASSERT_TRUE(w.refusal.has_value());
    EXPECT_EQ(w.refusal->code, protocol::error_code::no_leader);

    read_request r;
    r.key = key_in(unhosted);
    r.start.where = protocol::read_start::kind::beginning;
    r.max_bytes = 1024;
    r.linearizable = true;
    const stream_view v = test::run_to_end(io, streams.read(r));
    ASSERT_TRUE(v.refusal.has_value());
    EXPECT_EQ(v.refusal->code, protocol::error_code::no_leader);
}

TEST_F(EnginePlacement, ALeaderReadOfAHostedGroupIsServedOnceTheLeaderConfirmed) {
    const std::string key = key_in(1);
    ASSERT_FALSE(create(key).refusal.has_value());
    read_request r;
    r.key = key;
    r.start.where = protocol::read_start::kind::beginning;
    r.max_bytes = 1024;
    r.linearizable = true;
    const stream_view v = test::run_to_end(io, streams.read(r));
    EXPECT_FALSE(v.refusal.has_value());
    EXPECT_NE(v.incarnation, 0u);
}

}  // namespace
}  // namespace dstream::service
