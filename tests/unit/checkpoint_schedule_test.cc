#include "service/checkpoint_schedule.h"

#include <gtest/gtest.h>

namespace dstream::service {
namespace {

TEST(CheckpointSchedule, AGroupThatKeepsApplyingIsNotCheckpointedAtEverySweep) {
    checkpoint_schedule s;
    std::uint64_t index = 2;
    for (unsigned sweep = 1; sweep < checkpoint_schedule::busy_sweeps_at_most; ++sweep) {
        index += 1000;
        EXPECT_FALSE(s.sweep_due(index)) << "sweep " << sweep;
    }
}

TEST(CheckpointSchedule, AGroupThatNeverGoesQuietIsCheckpointedAfterTheBusySweeps) {
    checkpoint_schedule s;
    std::uint64_t index = 0;
    unsigned due = 0;
    for (unsigned sweep = 1; sweep <= 3 * checkpoint_schedule::busy_sweeps_at_most; ++sweep) {
        index += 1;
        if (s.sweep_due(index)) {
            ++due;
            EXPECT_EQ(sweep % checkpoint_schedule::busy_sweeps_at_most, 0u) << "sweep " << sweep;
            s.taken();
        }
    }
    EXPECT_EQ(due, 3u);
}

TEST(CheckpointSchedule, AGroupQuietForAWholeIntervalIsCheckpointed) {
    checkpoint_schedule s;
    EXPECT_FALSE(s.sweep_due(500));
    EXPECT_TRUE(s.sweep_due(500));
}

TEST(CheckpointSchedule, ACheckpointByAppliedBytesRestartsTheBusyCount) {
    checkpoint_schedule s;
    std::uint64_t index = 0;
    for (unsigned sweep = 1; sweep < checkpoint_schedule::busy_sweeps_at_most; ++sweep) {
        EXPECT_FALSE(s.sweep_due(++index));
    }
    s.taken();
    EXPECT_FALSE(s.sweep_due(++index));
}

}  // namespace
}  // namespace dstream::service
