// A thread that works behind the I/O threads says so to the scheduler and
// carries a name an operator can find it by.
#include "base/background_thread.h"

#include <pthread.h>
#include <sched.h>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace dstream {
namespace {

struct seen {
    int policy = -1;
    std::string name;
};

seen run_as(const char* name) {
    seen out;
    std::thread([&] {
        become_background_thread(name);
        out.policy = sched_getscheduler(0);
        char buffer[64] = {};
        pthread_getname_np(pthread_self(), buffer, sizeof buffer);
        out.name = buffer;
    }).join();
    return out;
}

TEST(BackgroundThread, IsBatchWorkUnderItsName) {
    const seen s = run_as("dstream-wal");
    EXPECT_EQ(s.policy, SCHED_BATCH);
    EXPECT_EQ(s.name, "dstream-wal");
}

TEST(BackgroundThread, ALongNameIsCutToTheKernelsLimitNotRefused) {
    const seen s = run_as("dstream-a-name-far-too-long");
    EXPECT_EQ(s.policy, SCHED_BATCH);
    EXPECT_EQ(s.name, "dstream-a-name-");
}

TEST(BackgroundThread, APolicyAnOperatorChoseStays) {
    seen s;
    std::thread([&] {
        const sched_param no_priority{};
        ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &no_priority), 0);
        become_background_thread("dstream-wal");
        s.policy = sched_getscheduler(0);
    }).join();
    EXPECT_EQ(s.policy, SCHED_IDLE);
}

TEST(BackgroundThread, OnlyTheCallingThreadChanges) {
    const int before = sched_getscheduler(0);
    run_as("dstream-wal");
    EXPECT_EQ(sched_getscheduler(0), before);
}

}  // namespace
}  // namespace dstream
