#include "base/reusable_queue.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace dstream {
namespace {

TEST(ReusableQueue, ElementsComeOutInTheOrderTheyWentIn) {
    reusable_queue<std::string> q;
    EXPECT_TRUE(q.empty());
    for (int i = 0; i < 100; ++i) {
        q.push_back(std::to_string(i));
        if (i % 3 == 2) {  // drain partly while filling
            EXPECT_EQ(q.front(), std::to_string(i / 3));
            q.pop_front();
        }
    }
    int expected = 100 / 3;
    while (!q.empty()) {
        EXPECT_EQ(q.front(), std::to_string(expected++));
        q.pop_front();
    }
    EXPECT_EQ(expected, 100);
    EXPECT_EQ(q.size(), 0U);
}

TEST(ReusableQueue, APoppedElementIsReleasedAtOnce) {
    reusable_queue<std::shared_ptr<int>> q;
    auto held = std::make_shared<int>(7);
    q.push_back(held);
    q.push_back(std::make_shared<int>(8));
    EXPECT_EQ(held.use_count(), 2);
    q.pop_front();
    EXPECT_EQ(held.use_count(), 1);
    EXPECT_EQ(*q.front(), 8);
}

TEST(ReusableQueue, AQueueThatFillsAndDrainsKeepsItsStorage) {
    reusable_queue<std::string> q;
    for (int i = 0; i < 8; ++i) q.push_back("x");
    while (!q.empty()) q.pop_front();
    const std::size_t reached = q.capacity();
    EXPECT_GE(reached, 8U);
    for (int round = 0; round < 10; ++round) {
        for (int i = 0; i < 8; ++i) q.push_back("x");
        EXPECT_EQ(q.capacity(), reached) << "round " << round;
        while (!q.empty()) q.pop_front();
    }
}

TEST(ReusableQueue, AQueueThatNeverEmptiesStaysWithinTwiceItsLength) {
    reusable_queue<int> q;
    for (int i = 0; i < 4; ++i) q.push_back(i);
    for (int i = 4; i < 100'000; ++i) {
        q.push_back(i);
        EXPECT_EQ(q.front(), i - 4);
        q.pop_front();
    }
    EXPECT_EQ(q.size(), 4U);
    EXPECT_LE(q.capacity(), 16U);
}

}  // namespace
}  // namespace dstream
