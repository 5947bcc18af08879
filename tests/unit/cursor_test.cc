#include "protocol/cursor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace dstream::protocol {
namespace {

constexpr unix_ms cursor_epoch = 1728432000000;  // 2024-10-09T00:00:00Z
constexpr unix_ms interval_ms = 20000;
constexpr std::uint64_t max_jump = 180;          // 3600 s of jitter in 20 s intervals

std::uint64_t as_number(const std::string& s) {
    EXPECT_FALSE(s.empty());
    for (char c : s) EXPECT_TRUE(c >= '0' && c <= '9') << s;
    return std::stoull(s);
}

TEST(Cursor, IntervalNumberWithoutClientCursor) {
    struct row {
        unix_ms now;
        std::uint64_t interval;
    };
    const row rows[] = {
        {0, 0},                                      // before the cursor epoch
        {cursor_epoch - 1, 0},
        {cursor_epoch, 0},
        {cursor_epoch + 1, 0},
        {cursor_epoch + interval_ms - 1, 0},
        {cursor_epoch + interval_ms, 1},
        {cursor_epoch + 3 * interval_ms + 19999, 3},
        {cursor_epoch + 1000 * interval_ms, 1000},
        {1767323045000, (1767323045000 - cursor_epoch) / interval_ms},  // 2026-01-02T03:04:05Z
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.now);
        for (std::uint64_t jitter : {0ULL, 1ULL, 179ULL, 12345ULL}) {
            EXPECT_EQ(next_cursor(r.now, std::nullopt, jitter), std::to_string(r.interval));
        }
    }
}

TEST(Cursor, ClientCursorBelowCurrentIntervalIsReplacedByTheInterval) {
    const unix_ms now = cursor_epoch + 1000 * interval_ms + 5;
    for (const char* theirs : {"0", "1", "500", "999"}) {
        SCOPED_TRACE(theirs);
        EXPECT_EQ(next_cursor(now, std::string_view(theirs), 77), "1000");
    }
}

TEST(Cursor, ClientCursorAtOrAboveIntervalGetsAStrictlyGreaterCursorWithinJitterBound) {
    const unix_ms now = cursor_epoch + 1000 * interval_ms;
    for (std::uint64_t theirs : {1000ULL, 1001ULL, 1050ULL, 5000ULL, 1ULL << 40}) {
        const std::string text = std::to_string(theirs);
        for (std::uint64_t jitter = 0; jitter < 1000; ++jitter) {
            const std::uint64_t next = as_number(next_cursor(now, std::string_view(text), jitter));
            ASSERT_GE(next, theirs + 1) << "theirs " << theirs << " jitter " << jitter;
            ASSERT_LE(next, theirs + max_jump) << "theirs " << theirs << " jitter " << jitter;
        }
    }
}

TEST(Cursor, JitterCoversTheWholeRange) {
    const unix_ms now = cursor_epoch + 10 * interval_ms;
    bool seen_min = false;
    bool seen_max = false;
    for (std::uint64_t jitter = 0; jitter < 360; ++jitter) {
        const std::uint64_t next = as_number(next_cursor(now, std::string_view("10"), jitter));
        seen_min |= next == 11;
        seen_max |= next == 10 + max_jump;
    }
    EXPECT_TRUE(seen_min);
    EXPECT_TRUE(seen_max);
}

TEST(Cursor, NonNumericClientCursorIsIgnored) {
    const unix_ms now = cursor_epoch + 1000 * interval_ms;
    const char* junk[] = {"", "abc", "1000abc", "abc1000", "-1", "-1000", "+1000", " 1000",
                          "1000 ", "10.5", "1e4", "0x3e8",
                          "12345678901234567890123456789012345678901"};  // over 40 digits: not ours
    for (const char* c : junk) {
        SCOPED_TRACE(c);
        EXPECT_EQ(next_cursor(now, std::string_view(c), 5), "1000");
    }
}

TEST(Cursor, LeadingZerosAreStillNumeric) {
    const unix_ms now = cursor_epoch + 1000 * interval_ms;
    const std::uint64_t next = as_number(next_cursor(now, std::string_view("0001000"), 0));
    EXPECT_EQ(next, 1001u);
}

TEST(Cursor, HugeClientCursorStillYieldsAStrictlyGreaterCursor) {
    const unix_ms now = cursor_epoch + 1000 * interval_ms;
    for (const char* theirs : {"18446744073709551615", "18446744073709551600"}) {
        SCOPED_TRACE(theirs);
        const std::string next = next_cursor(now, std::string_view(theirs), 100);
        // Compare as decimal strings without leading zeros: longer means greater.
        const std::string t(theirs);
        EXPECT_TRUE(next.size() > t.size() || (next.size() == t.size() && next > t))
            << "next cursor " << next << " is not above " << t;
    }
}

TEST(Cursor, OnlyANumberOfOursIsHonoured) {
    // What next_cursor() ignores, every reader without a cursor of its own
    // may share: the SSE path renders one control event for them all.
    EXPECT_FALSE(honours_client_cursor(std::nullopt));
    for (const char* c : {"", "abc", "-1", "10.5", "12345678901234567890123456789012345678901"}) {
        SCOPED_TRACE(c);
        EXPECT_FALSE(honours_client_cursor(std::string_view(c)));
        EXPECT_EQ(next_cursor(cursor_epoch + 1000 * interval_ms, std::string_view(c), 5), "1000");
    }
    for (const char* c : {"0", "1000", "0001000", "1234567890123456789012345678901234567890"}) {
        SCOPED_TRACE(c);
        EXPECT_TRUE(honours_client_cursor(std::string_view(c)));
    }
}

}  // namespace
}  // namespace dstream::protocol
