#include "edge/read_quota.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

using std::chrono::milliseconds;
using clock = read_quota::clock;

TEST(ReadQuota, OffByDefaultNeverDelays) {
    read_quota quota(0);
    EXPECT_FALSE(quota.enabled());
    EXPECT_EQ(quota.charge("10.0.0.1", 1ULL << 40, clock::now()), clock::duration::zero());
}

TEST(ReadQuota, ASecondsWorthIsSentAtOnceAndMoreWaitsForItsShare) {
    read_quota quota(1000);  // bytes per second
    const auto t0 = clock::now();
    EXPECT_EQ(quota.charge("a", 1000, t0), clock::duration::zero());
    // The bucket is empty: 500 more bytes are paid in half a second.
    const auto wait = quota.charge("a", 500, t0);
    EXPECT_NEAR(std::chrono::duration<double>(wait).count(), 0.5, 1e-6);
    // What is owed keeps accumulating: a read right after waits for both.
    EXPECT_NEAR(std::chrono::duration<double>(quota.charge("a", 500, t0)).count(), 1.0, 1e-6);
}

TEST(ReadQuota, TheBucketRefillsWithTimeUpToOneSecond) {
    read_quota quota(1000);
    const auto t0 = clock::now();
    EXPECT_EQ(quota.charge("a", 1000, t0), clock::duration::zero());
    // Half a second later, half the quota is back.
    EXPECT_EQ(quota.charge("a", 500, t0 + milliseconds(500)), clock::duration::zero());
    EXPECT_GT(quota.charge("a", 1, t0 + milliseconds(500)), clock::duration::zero());
    // An idle client gets one second's worth, never more.
    EXPECT_EQ(quota.charge("b", 0, t0), clock::duration::zero());
    EXPECT_EQ(quota.charge("b", 1000, t0 + std::chrono::hours(1)), clock::duration::zero());
    EXPECT_GT(quota.charge("b", 1, t0 + std::chrono::hours(1)), clock::duration::zero());
}

TEST(ReadQuota, EachClientAddressHasItsOwnBucket) {
    read_quota quota(1000);
    const auto t0 = clock::now();
    EXPECT_EQ(quota.charge("10.0.0.1", 1000, t0), clock::duration::zero());
    EXPECT_GT(quota.charge("10.0.0.1", 100, t0), clock::duration::zero());
    EXPECT_EQ(quota.charge("10.0.0.2", 1000, t0), clock::duration::zero());
}

TEST(ReadQuota, PruningManyClientsKeepsWhatOneOwes) {
    read_quota quota(1000);
    const auto t0 = clock::now();
    // One client in debt, then more distinct addresses than the table keeps.
    EXPECT_EQ(quota.charge("debtor", 1000, t0), clock::duration::zero());
    EXPECT_GT(quota.charge("debtor", 2000, t0), clock::duration::zero());
    for (int i = 0; i < 70000; ++i) quota.charge("c" + std::to_string(i), 0, t0);
    // The debtor still owes: pruning drops only full buckets.
    EXPECT_GT(quota.charge("debtor", 1, t0), clock::duration::zero());
}

}  // namespace
}  // namespace dstream::edge
