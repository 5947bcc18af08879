// Stream subresources, with the two paths of extensions 2.2 Upload in Parts.
#include "edge/subresource.h"

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

using protocol::error_code;

TEST(Subresource, SnapshotRetentionAndParts) {
    auto snapshot = parse_subresource("snapshot/00000000000000000012");
    ASSERT_TRUE(snapshot);
    EXPECT_EQ(snapshot->what, subresource::kind::snapshot);
    EXPECT_EQ(snapshot->offset, 12u);

    auto part = parse_subresource("snapshot/00000000000000000034/parts");
    ASSERT_TRUE(part);
    EXPECT_EQ(part->what, subresource::kind::snapshot_part);
    EXPECT_EQ(part->offset, 34u);

    auto parts = parse_subresource("snapshot/parts");
    ASSERT_TRUE(parts);
    EXPECT_EQ(parts->what, subresource::kind::snapshot_parts);

    auto retention = parse_subresource("retention/00000000000000000005");
    ASSERT_TRUE(retention);
    EXPECT_EQ(retention->what, subresource::kind::retention);
}

TEST(Subresource, APartsOffsetIsCheckedAsAnOffset) {
    for (const char* bad : {"snapshot/12/parts", "snapshot/-1/parts", "snapshot/now/parts"}) {
        SCOPED_TRACE(bad);
        const auto r = parse_subresource(bad);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.err().code, error_code::invalid_offset);
    }
}

TEST(Subresource, OtherShapesNameNothing) {
    for (const char* other : {"snapshot", "snapshot/", "snapshot//parts", "snapshot/parts/x",
                              "snapshot/00000000000000000012/parts/x", "retention/parts",
                              "retention/00000000000000000012/parts", "snapshots/parts"}) {
        SCOPED_TRACE(other);
        const auto r = parse_subresource(other);
        if (r) {
            EXPECT_EQ(r->what, subresource::kind::other);
        }
    }
}

}  // namespace
}  // namespace dstream::edge
