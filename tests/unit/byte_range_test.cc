#include "edge/byte_range.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

TEST(ByteRange, ParsesTheThreeForms) {
    auto closed = parse_byte_range("bytes=2-5");
    ASSERT_TRUE(closed);
    EXPECT_FALSE(closed->suffix);
    EXPECT_EQ(closed->first, 2u);
    EXPECT_EQ(closed->last, 5u);

    auto open = parse_byte_range("bytes=7-");
    ASSERT_TRUE(open);
    EXPECT_FALSE(open->suffix);
    EXPECT_EQ(open->first, 7u);
    EXPECT_EQ(open->last, std::nullopt);

    auto suffix = parse_byte_range("bytes=-3");
    ASSERT_TRUE(suffix);
    EXPECT_TRUE(suffix->suffix);
    EXPECT_EQ(suffix->first, 3u);
}

TEST(ByteRange, TheUnitIsCaseInsensitive) {
    EXPECT_TRUE(parse_byte_range("Bytes=0-1"));
    EXPECT_TRUE(parse_byte_range("BYTES=0-1"));
}

TEST(ByteRange, AnythingElseMeansTheWholeBody) {
    for (const char* h :
         {"", "bytes=", "bytes=-", "bytes=-0", "bytes=5-2", "bytes=1-2,4-5", "bytes=a-b",
          "bytes= 1-2", "bytes=1 -2", "bytes=+1-2", "bytes=--1", "items=0-1", "bytes 0-1",
          "bytes=1-2-3", "bytes=18446744073709551616-", "bytes=-18446744073709551616"}) {
        SCOPED_TRACE(h);
        EXPECT_FALSE(parse_byte_range(h));
    }
}

TEST(ByteRange, ResolvesAgainstTheBodySize) {
    auto span = resolve_byte_range({false, 2, 5}, 10);
    ASSERT_TRUE(span);
    EXPECT_EQ(span->first, 2u);
    EXPECT_EQ(span->length, 4u);
    // A last position past the end is cut at the end.
    span = resolve_byte_range({false, 8, 100}, 10);
    ASSERT_TRUE(span);
    EXPECT_EQ(span->length, 2u);
    span = resolve_byte_range({false, 3, std::nullopt}, 10);
    ASSERT_TRUE(span);
    EXPECT_EQ(span->length, 7u);
    // A suffix longer than the body is the whole body.
    span = resolve_byte_range({true, 25, std::nullopt}, 10);
    ASSERT_TRUE(span);
    EXPECT_EQ(span->first, 0u);
    EXPECT_EQ(span->length, 10u);
}

TEST(ByteRange, UnsatisfiableRanges) {
    EXPECT_FALSE(resolve_byte_range({false, 10, std::nullopt}, 10));
    EXPECT_FALSE(resolve_byte_range({false, 0, std::nullopt}, 0));
    EXPECT_FALSE(resolve_byte_range({true, 1, std::nullopt}, 0));
}

TEST(ByteRange, ExtremePositionsStayInsideTheBody) {
    auto span = resolve_byte_range({false, max_u64 - 1, max_u64}, max_u64);
    ASSERT_TRUE(span);
    EXPECT_EQ(span->first, max_u64 - 1);
    EXPECT_EQ(span->length, 1u);
    span = resolve_byte_range({false, 0, max_u64}, max_u64);
    ASSERT_TRUE(span);
    EXPECT_EQ(span->length, max_u64);
}

}  // namespace
}  // namespace dstream::edge
