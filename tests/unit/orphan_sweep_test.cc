// The start-up sweep in a bucket that several nodes share: it removes only
// this node's old objects that nothing references (service/orphan_sweep.h),
// through the node's prefix (storage/prefixed_object_store.h).
#include "service/orphan_sweep.h"

#include <gtest/gtest.h>

#include "memory_object_store.h"
#include "storage/prefixed_object_store.h"

namespace dstream::service {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t now_ms = 10'000'000;
constexpr std::chrono::milliseconds grace = 1h;
constexpr std::int64_t old_ms = now_ms - 2 * 3'600'000;
constexpr std::int64_t young_ms = now_ms - 60'000;

class OrphanSweep : public ::testing::Test {
protected:
    test::memory_object_store bucket;
    storage::prefixed_object_store node{bucket, "cold/node-a/"};

    orphan_sweep_counts sweep(const std::unordered_set<std::string>& referenced = {}) {
        auto counts = sweep_orphan_objects(node, referenced, grace, now_ms);
        EXPECT_TRUE(counts);
        return counts ? *counts : orphan_sweep_counts{};
    }
};

TEST_F(OrphanSweep, AnOldOrphanGoesAndAYoungOneStays) {
    bucket.place("cold/node-a/chunks/old", "x", old_ms);
    bucket.place("cold/node-a/snapshots/old", "x", old_ms);
    bucket.place("cold/node-a/chunks/young", "x", young_ms);
    const orphan_sweep_counts counts = sweep();
    EXPECT_FALSE(bucket.holds("cold/node-a/chunks/old"));
    EXPECT_FALSE(bucket.holds("cold/node-a/snapshots/old"));
    EXPECT_TRUE(bucket.holds("cold/node-a/chunks/young")) << "its command may be on its way";
    EXPECT_EQ(counts.listed, 3u);
    EXPECT_EQ(counts.removed, 2u);
    EXPECT_EQ(counts.kept_young, 1u);
}

TEST_F(OrphanSweep, AnObjectOfUnknownAgeStays) {
    bucket.place("cold/node-a/chunks/ageless", "x", 0);
    EXPECT_EQ(sweep().kept_young, 1u);
    EXPECT_TRUE(bucket.holds("cold/node-a/chunks/ageless"));
}

TEST_F(OrphanSweep, AReferencedObjectNeverGoesHoweverOld) {
    bucket.place("cold/node-a/chunks/named", "x", 1);
    bucket.place("cold/node-a/snapshots/named", "x", 1);
    const orphan_sweep_counts counts = sweep({"chunks/named", "snapshots/named"});
    EXPECT_TRUE(bucket.holds("cold/node-a/chunks/named"));
    EXPECT_TRUE(bucket.holds("cold/node-a/snapshots/named"));
    EXPECT_EQ(counts.removed, 0u);
}

TEST_F(OrphanSweep, AnotherNodesObjectsSurviveHoweverOld) {
    bucket.place("cold/node-b/chunks/theirs", "x", old_ms);
    bucket.place("cold/node-b/snapshots/theirs", "x", old_ms);
    bucket.place("cold/node-ab/chunks/theirs", "x", old_ms);
    bucket.place("cold/chunks/above", "x", old_ms);
    bucket.place("cold/node-a/chunks/mine", "x", old_ms);
    const orphan_sweep_counts counts = sweep();
    EXPECT_EQ(counts.listed, 1u) << "the node sees its own prefix only";
    EXPECT_FALSE(bucket.holds("cold/node-a/chunks/mine"));
    EXPECT_EQ(bucket.count_under("cold/node-b/"), 2u);
    EXPECT_TRUE(bucket.holds("cold/node-ab/chunks/theirs"));
    EXPECT_TRUE(bucket.holds("cold/chunks/above"));
}

// Staged parts have a sweep of their own, by their staging time.
TEST_F(OrphanSweep, StagedPartsAreLeftToThePartSweep) {
    bucket.place("cold/node-a/parts/aa/1/p", "x", old_ms);
    EXPECT_EQ(sweep().listed, 0u);
    EXPECT_TRUE(bucket.holds("cold/node-a/parts/aa/1/p"));
}

TEST_F(OrphanSweep, AFailedListingIsAnErrorAndRemovesNothing) {
    bucket.place("cold/node-a/chunks/old", "x", old_ms);
    bucket.set_down(true);
    const auto counts = sweep_orphan_objects(node, {}, grace, now_ms);
    ASSERT_FALSE(counts);
    EXPECT_EQ(counts.err().code, protocol::error_code::cold_store_failed);
    bucket.set_down(false);
    EXPECT_TRUE(bucket.holds("cold/node-a/chunks/old"));
}

}  // namespace
}  // namespace dstream::service
