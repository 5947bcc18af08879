// Admission control's budgets: shares are taken and given back, a lone body
// always fits, and live readers are bounded per node and per stream.
#include "edge/admission.h"

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

TEST(Admission, BodiesShareTheBudgetAndGiveItBack) {
    admission gate(admission_limits{100, 10, 10});
    auto a = gate.admit_body(60);
    ASSERT_TRUE(a);
    EXPECT_FALSE(gate.admit_body(41));
    {
        auto b = gate.admit_body(40);
        ASSERT_TRUE(b);
        EXPECT_FALSE(gate.admit_body(1));
    }
    EXPECT_TRUE(gate.admit_body(40));
    EXPECT_TRUE(gate.admit_body(0));  // no body: always admitted
}

TEST(Admission, ALoneBodyLargerThanTheBudgetIsAdmitted) {
    admission gate(admission_limits{100, 10, 10});
    auto big = gate.admit_body(500);
    ASSERT_TRUE(big);
    EXPECT_FALSE(gate.admit_body(1));
}

TEST(Admission, LiveReadersAreBoundedPerStreamAndPerNode) {
    admission gate(admission_limits{100, 3, 2});
    auto a1 = gate.admit_live_read("a");
    auto a2 = gate.admit_live_read("a");
    ASSERT_TRUE(a1 && a2);
    EXPECT_FALSE(gate.admit_live_read("a"));
    auto b1 = gate.admit_live_read("b");
    ASSERT_TRUE(b1);
    EXPECT_FALSE(gate.admit_live_read("c"));  // the node's bound
    a1.reset();
    EXPECT_TRUE(gate.admit_live_read("c"));
    EXPECT_TRUE(gate.admit_live_read("a"));
}

}  // namespace
}  // namespace dstream::edge
