// Stream subresources, with the two paths of extensions 2.2 Upload in Parts
// and the two immutable resources of extensions 4.1.
#include "edge/subresource.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

using protocol::error_code;

// The decoded segments of `path`, split on '/' as the router splits them.
result<subresource> parse(std::string_view path) {
    std::vector<std::string> segments;
    for (std::size_t at = 0;;) {
        const auto slash = path.find('/', at);
        segments.emplace_back(path.substr(at, slash == std::string_view::npos ? slash : slash - at));
        if (slash == std::string_view::npos) break;
        at = slash + 1;
    }
    return parse_subresource(segments);
}

TEST(Subresource, SnapshotRetentionAndParts) {
    auto snapshot = parse("snapshot/00000000000000000012");
    ASSERT_TRUE(snapshot);
    EXPECT_EQ(snapshot->what, subresource::kind::snapshot);
    EXPECT_EQ(snapshot->offset, 12u);

    auto part = parse("snapshot/00000000000000000034/parts");
    ASSERT_TRUE(part);
    EXPECT_EQ(part->what, subresource::kind::snapshot_part);
    EXPECT_EQ(part->offset, 34u);

    auto parts = parse("snapshot/parts");
    ASSERT_TRUE(parts);
    EXPECT_EQ(parts->what, subresource::kind::snapshot_parts);

    auto retention = parse("retention/00000000000000000005");
    ASSERT_TRUE(retention);
    EXPECT_EQ(retention->what, subresource::kind::retention);

    auto bootstrap = parse("bootstrap");
    ASSERT_TRUE(bootstrap);
    EXPECT_EQ(bootstrap->what, subresource::kind::bootstrap);
}

TEST(Subresource, APartsOffsetIsCheckedAsAnOffset) {
    for (const char* bad : {"snapshot/12/parts", "snapshot/-1/parts", "snapshot/now/parts"}) {
        SCOPED_TRACE(bad);
        const auto r = parse(bad);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.err().code, error_code::invalid_offset);
    }
}

// An escaped '/' stays inside its segment (RFC 3986 2.2): an offset segment
// holding one is a malformed offset, not another path.
TEST(Subresource, AnOffsetSegmentWithASlashIsAnInvalidOffset) {
    const std::vector<std::string> segments{"snapshot", "0000000000/0000000012"};
    const auto r = parse_subresource(segments);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().code, error_code::invalid_offset);
    const std::vector<std::string> joined{"snapshot/00000000000000000012"};
    const auto other = parse_subresource(joined);
    ASSERT_TRUE(other);
    EXPECT_EQ(other->what, subresource::kind::other);
}

TEST(Subresource, OtherShapesNameNothing) {
    for (const char* other : {"snapshot", "snapshot/", "snapshot//parts", "snapshot/parts/x",
                              "snapshot/00000000000000000012/parts/x", "retention",
                              "retention/00000000000000000012/parts", "snapshots/parts",
                              "bootstrap/x", "incarnation", "incarnation/4503599627370496",
                              "incarnation/4503599627370496/chunk",
                              "incarnation/4503599627370496/chunk/00000000000000000000/x",
                              "incarnation/4503599627370496/tail/00000000000000000000",
                              "incarnation/x/bytes/y"}) {
        SCOPED_TRACE(other);
        const auto r = parse(other);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->what, subresource::kind::other);
    }
}

TEST(Subresource, ImmutableResources) {
    auto chunk = parse("incarnation/4503599627370496/chunk/00000000000000004096");
    ASSERT_TRUE(chunk);
    EXPECT_EQ(chunk->what, subresource::kind::immutable_chunk);
    EXPECT_EQ(chunk->token, 4503599627370496u);
    EXPECT_EQ(chunk->offset, 4096u);
    auto snapshot = parse("incarnation/9007199254740991/snapshot/00000000000000000012");
    ASSERT_TRUE(snapshot);
    EXPECT_EQ(snapshot->what, subresource::kind::immutable_snapshot);
    EXPECT_EQ(snapshot->token, 9007199254740991u);
}

// immutable-reads' 400 row: INVALID_RESOURCE is for a token or an offset
// inside the two resources that is not in the form the server issues.
TEST(Subresource, AMalformedTokenOrOffsetIsAnInvalidResource) {
    for (const char* bad : {"incarnation/4503599627370495/chunk/00000000000000000000",  // < 2^52
                            "incarnation/9007199254740992/snapshot/00000000000000000000",  // 2^53
                            "incarnation/0450359962737049/chunk/00000000000000000000",
                            "incarnation/45035996273704960/chunk/00000000000000000000",
                            "incarnation/45035996273704x6/chunk/00000000000000000000",
                            "incarnation/4503599627370496/chunk/12",
                            "incarnation/4503599627370496/snapshot/-1",
                            "incarnation/4503599627370496/chunk/"}) {
        SCOPED_TRACE(bad);
        const auto r = parse(bad);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.err().code, error_code::invalid_resource);
    }
}

}  // namespace
}  // namespace dstream::edge
