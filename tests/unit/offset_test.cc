#include "protocol/offset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dstream::protocol {
namespace {

constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

TEST(Offset, FormatIsExactlyTwentyZeroPaddedDigits) {
    struct row {
        std::uint64_t position;
        const char* wire;
    };
    const row rows[] = {
        {0, "00000000000000000000"},
        {1, "00000000000000000001"},
        {9, "00000000000000000009"},
        {10, "00000000000000000010"},
        {1234567890, "00000000001234567890"},
        {u64_max, "18446744073709551615"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.wire);
        const std::string s = format_offset(r.position);
        EXPECT_EQ(s, r.wire);
        EXPECT_EQ(s.size(), offset_digits);
    }
}

TEST(Offset, FormatToWritesExactlyTwentyCharsAndNothingMore) {
    std::string buf(offset_digits + 2, '#');
    format_offset_to(42, buf.data() + 1);
    EXPECT_EQ(buf, "#00000000000000000042#");
}

TEST(Offset, ParseAcceptsTwentyDigitsAndRoundTrips) {
    const std::uint64_t values[] = {0, 1, 7, 999, 1000, 1ULL << 32, 1ULL << 53, u64_max - 1, u64_max};
    for (std::uint64_t v : values) {
        SCOPED_TRACE(v);
        const auto parsed = parse_offset(format_offset(v));
        ASSERT_TRUE(parsed.ok());
        EXPECT_EQ(*parsed, v);
    }
}

TEST(Offset, ParseRejectsMalformedText) {
    const char* bad[] = {
        "",
        "0",
        "0000000000000000000",     // 19 digits
        "000000000000000000000",   // 21 digits
        "0000000000000000000a",    // non-digit at the end
        "a0000000000000000000",    // non-digit at the start
        "-0000000000000000001",    // sign
        "+0000000000000000001",
        " 0000000000000000001",    // whitespace
        "0000000000000000001 ",
        "00000000000000000.01",
        "-1",                      // sentinels are not offsets
        "now",
    };
    for (const char* text : bad) {
        SCOPED_TRACE(text);
        const auto r = parse_offset(text);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, error_code::invalid_offset);
    }
}

TEST(Offset, ParseRejectsValuesAboveUint64Max) {
    const char* too_big[] = {
        "18446744073709551616",  // 2^64
        "18446744073709551619",
        "18446744073709551620",
        "18446744073709552000",
        "20000000000000000000",
        "99999999999999999999",
    };
    for (const char* text : too_big) {
        SCOPED_TRACE(text);
        const auto r = parse_offset(text);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, error_code::invalid_offset);
    }
    // The largest value is still fine.
    ASSERT_TRUE(parse_offset("18446744073709551615").ok());
}

TEST(Offset, ParseRejectsEmbeddedNul) {
    std::string s(offset_digits, '0');
    s[10] = '\0';
    EXPECT_FALSE(parse_offset(s).ok());
}

TEST(Offset, LexicographicOrderEqualsNumericOrder) {
    std::mt19937_64 rng(12345);
    std::vector<std::uint64_t> values = {0, 1, 9, 10, 99, 100, u64_max, u64_max - 1, 1ULL << 63};
    for (int i = 0; i < 500; ++i) {
        // Mix magnitudes so many digit lengths are covered.
        values.push_back(rng() >> (rng() % 64));
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        for (std::size_t j = 0; j < values.size(); j += 7) {
            const std::string a = format_offset(values[i]);
            const std::string b = format_offset(values[j]);
            ASSERT_EQ(a < b, values[i] < values[j]) << a << " vs " << b;
            ASSERT_EQ(a == b, values[i] == values[j]);
        }
    }
    std::vector<std::string> wire;
    for (auto v : values) wire.push_back(format_offset(v));
    std::sort(values.begin(), values.end());
    std::sort(wire.begin(), wire.end());
    for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(wire[i], format_offset(values[i]));
}

TEST(ReadStart, SentinelsAndPositions) {
    {
        const auto r = parse_read_start("-1");
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->where, read_start::kind::beginning);
    }
    {
        const auto r = parse_read_start("now");
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->where, read_start::kind::now);
    }
    {
        const auto r = parse_read_start("00000000000000000123");
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->where, read_start::kind::position);
        EXPECT_EQ(r->position, 123u);
    }
    {
        const auto r = parse_read_start("00000000000000000000");
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->where, read_start::kind::position);
        EXPECT_EQ(r->position, 0u);
    }
}

TEST(ReadStart, RejectsNearMissSentinelsAndBadOffsets) {
    const char* bad[] = {"", "NOW", "Now", "now ", " now", "-2", "-01", "--1", "1", "-1 ",
                         "0000000000000000000", "000000000000000000000", "18446744073709551616"};
    for (const char* text : bad) {
        SCOPED_TRACE(text);
        const auto r = parse_read_start(text);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, error_code::invalid_offset);
    }
}

}  // namespace
}  // namespace dstream::protocol
