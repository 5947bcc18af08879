// The admin listener's pure parts: its bearer token check, the holds a
// backup puts on cold objects, and a restore's history id.
#include <gtest/gtest.h>

#include "admin/restore_history.h"
#include "edge/admin_token.h"
#include "memory_object_store.h"
#include "storage/held_object_store.h"

namespace dstream {
namespace {

TEST(AdminToken, OnlyTheBearerSchemeWithExactlyTheTokenPasses) {
    const std::string token = "s3cr3t-token";
    EXPECT_TRUE(edge::bearer_token_matches("Bearer s3cr3t-token", token));
    EXPECT_TRUE(edge::bearer_token_matches("bearer s3cr3t-token", token));  // RFC 9110 11.1
    EXPECT_TRUE(edge::bearer_token_matches("BEARER   s3cr3t-token ", token));
    for (const char* wrong : {"", "Bearer", "Bearer ", "Bearer s3cr3t-toke", "Bearer s3cr3t-token2",
                              "Basic s3cr3t-token", "s3cr3t-token", "Bearers3cr3t-token",
                              "Bearer S3CR3T-TOKEN"}) {
        EXPECT_FALSE(edge::bearer_token_matches(wrong, token)) << wrong;
    }
    // No token configured matches nothing, not even an empty one.
    EXPECT_FALSE(edge::bearer_token_matches("Bearer ", ""));
    EXPECT_FALSE(edge::bearer_token_matches("", ""));
}

TEST(HeldObjectStore, ARemovalOfAHeldObjectWaitsForTheLastHold) {
    test::memory_object_store inner;
    storage::held_object_store store(inner);
    inner.place("a", "1", 0);
    inner.place("b", "2", 0);
    auto first = store.hold({"a", "b"});
    auto second = store.hold({"a"});
    EXPECT_TRUE(store.remove("a").ok());  // deferred
    EXPECT_TRUE(store.remove("b").ok());
    EXPECT_TRUE(inner.holds("a"));
    EXPECT_TRUE(inner.holds("b"));
    first.reset();
    EXPECT_FALSE(inner.holds("b"));  // its last hold is gone: removed now
    EXPECT_TRUE(inner.holds("a"));   // still held by `second`
    second.reset();
    EXPECT_FALSE(inner.holds("a"));
    EXPECT_EQ(store.held(), 0u);

    // An object held and never removed stays.
    inner.place("c", "3", 0);
    store.hold({"c"}).reset();
    EXPECT_TRUE(inner.holds("c"));
    EXPECT_TRUE(store.remove("c").ok());
    EXPECT_FALSE(inner.holds("c"));
}

TEST(RestoreHistory, OneIdPerBackupAndGroup) {
    const std::string a = "0123456789abcdef0123456789abcdef";
    const std::string b = "0123456789abcdef0123456789abcdee";
    EXPECT_EQ(admin::restore_history_id(a, 3), admin::restore_history_id(a, 3));
    EXPECT_NE(admin::restore_history_id(a, 3), admin::restore_history_id(a, 4));
    EXPECT_NE(admin::restore_history_id(a, 3), admin::restore_history_id(b, 3));
    EXPECT_NE(admin::restore_history_id(a, 0), 0u);
}

}  // namespace
}  // namespace dstream
