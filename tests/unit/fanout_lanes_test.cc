// runtime::fanout_lanes: a reader's lane is on its own thread, so that the
// lane's hand-off to it stays there.
#include "runtime/fanout_lanes.h"

#include <set>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

namespace dstream::runtime {
namespace {

TEST(FanoutLanes, AReaderGetsTheLaneOfItsOwnThread) {
    boost::asio::io_context first;
    boost::asio::io_context second;
    fanout_lanes lanes(io_contexts({&first, &second}));
    ASSERT_EQ(lanes.size(), 2u);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(lanes.assign(first), 0u);
        EXPECT_EQ(lanes.assign(second), 1u);
    }
}

TEST(FanoutLanes, ReadersOfAContextWithoutALaneAndOfOneWithSeveralAreSpread) {
    boost::asio::io_context shared;
    boost::asio::io_context elsewhere;
    fanout_lanes lanes(io_contexts({&shared, &shared, &shared}));
    std::set<std::size_t> home;
    std::set<std::size_t> other;
    for (int i = 0; i < 6; ++i) {
        home.insert(lanes.assign(shared));
        other.insert(lanes.assign(elsewhere));
    }
    EXPECT_EQ(home.size(), 3u);
    EXPECT_EQ(other.size(), 3u);
}

}  // namespace
}  // namespace dstream::runtime
