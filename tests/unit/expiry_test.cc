#include "protocol/expiry.h"

#include <optional>
#include <random>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace dstream::protocol {
namespace {

constexpr unix_ms new_year_2024 = 1704067200000;  // 2024-01-01T00:00:00Z

// ---------------------------------------------------------------- Stream-TTL

TEST(StreamTtl, AcceptsCanonicalNonNegativeIntegers) {
    struct row {
        const char* text;
        std::uint64_t seconds;
    };
    const row rows[] = {
        {"0", 0},       {"1", 1},         {"60", 60},
        {"3600", 3600}, {"86400", 86400}, {"999999999999999", 999999999999999ULL},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.text);
        const auto v = parse_ttl_seconds(r.text);
        ASSERT_TRUE(v.ok()) << v.err().message;
        EXPECT_EQ(*v, r.seconds);
    }
}

TEST(StreamTtl, RejectsNonCanonicalForms) {
    const char* bad[] = {"",      "060", "00",  "+60", "-1",  "-0",   "60.5", "60.0", "1e3",
                         "3.6e3", "abc", " 60", "60 ", "6 0", "0x10", "6_0",  "١٢",   "60s"};
    for (const char* text : bad) {
        SCOPED_TRACE(text);
        const auto v = parse_ttl_seconds(text);
        ASSERT_FALSE(v.ok());
        EXPECT_EQ(v.err().code, error_code::invalid_header);
    }
}

// ---------------------------------------------------------- Stream-Expires-At

TEST(Rfc3339, ParsesUtcAndOffsetsToTheSameInstant) {
    struct row {
        const char* text;
        unix_ms expected;
    };
    const row rows[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"2024-01-01T00:00:00Z", new_year_2024},
        {"2024-01-01T00:00:00z", new_year_2024},
        {"2024-01-01t00:00:00Z", new_year_2024},
        {"2024-01-01 00:00:00Z", new_year_2024},
        {"2024-01-01T02:00:00+02:00", new_year_2024},
        {"2023-12-31T18:30:00-05:30", new_year_2024},
        {"2024-01-01T00:00:00+00:00", new_year_2024},
        {"2024-01-01T00:00:00-00:00", new_year_2024},
        {"2023-12-31T23:59:00+23:59", new_year_2024 - 86400000},
        {"2024-02-29T12:00:00Z", 1709208000000},
        {"2000-02-29T00:00:00Z", 951782400000},
        {"9999-12-31T23:59:59Z", 253402300799000},
        {"1900-01-01T00:00:00Z", -2208988800000},
        {"2026-01-02T03:04:05Z", 1767323045000},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.text);
        const auto v = parse_rfc3339(r.text);
        ASSERT_TRUE(v.ok()) << v.err().message;
        EXPECT_EQ(*v, r.expected);
    }
}

TEST(Rfc3339, FractionalSecondsAreMilliseconds) {
    struct row {
        const char* text;
        unix_ms expected;
    };
    const row rows[] = {
        {"2024-01-01T00:00:00.5Z", new_year_2024 + 500},
        {"2024-01-01T00:00:00.05Z", new_year_2024 + 50},
        {"2024-01-01T00:00:00.123Z", new_year_2024 + 123},
        {"2024-01-01T00:00:00.1239Z", new_year_2024 + 123},  // truncated below 1 ms
        {"2024-01-01T00:00:00.123456789Z", new_year_2024 + 123},
        {"2024-01-01T00:00:00.000000000000000000001Z", new_year_2024},
        {"2024-01-01T02:00:00.250+02:00", new_year_2024 + 250},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.text);
        const auto v = parse_rfc3339(r.text);
        ASSERT_TRUE(v.ok()) << v.err().message;
        EXPECT_EQ(*v, r.expected);
    }
}

TEST(Rfc3339, RejectsInvalidDatesAndTimes) {
    const char* bad[] = {
        "2024-02-30T00:00:00Z",  // Feb 30
        "2023-02-29T00:00:00Z",  // not a leap year
        "1900-02-29T00:00:00Z",  // century, not a leap year
        "2024-04-31T00:00:00Z",  // April has 30 days
        "2024-13-01T00:00:00Z",  // month 13
        "2024-00-10T00:00:00Z",  // month 0
        "2024-01-00T00:00:00Z",  // day 0
        "2024-01-32T00:00:00Z", "2024-01-01T24:00:00Z",
        "2024-01-01T23:60:00Z", "2024-01-01T23:59:61Z",
    };
    for (const char* text : bad) {
        SCOPED_TRACE(text);
        const auto v = parse_rfc3339(text);
        ASSERT_FALSE(v.ok());
        EXPECT_EQ(v.err().code, error_code::invalid_header);
    }
}

TEST(Rfc3339, RejectsMalformedSyntax) {
    const char* bad[] = {
        "",
        "abc",
        "2024-01-01",
        "2024-01-01T00:00:00",       // no zone
        "2024-01-01T00:00Z",         // no seconds
        "2024-01-01T00:00:00+0200",  // offset without colon
        "2024-01-01T00:00:00+02",
        "2024-01-01T00:00:00+2:00",
        "2024-01-01T00:00:00+24:00",  // offset hour out of range
        "2024-01-01T00:00:00+02:60",  // offset minute out of range
        "2024-01-01T00:00:00.Z",      // fraction without digits
        "2024-01-01T00:00:00,5Z",
        "2024-01-01T00:00:00ZZ",
        "2024-01-01T00:00:00Z ",
        " 2024-01-01T00:00:00Z",
        "2024-1-01T00:00:00Z",
        "24-01-01T00:00:00Z",
        "2024/01/01T00:00:00Z",
        "2024-01-01X00:00:00Z",
        "2024-01-01T00-00-00Z",
        "+2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00UTC",
        "1704067200",
    };
    for (const char* text : bad) {
        SCOPED_TRACE(text);
        const auto v = parse_rfc3339(text);
        ASSERT_FALSE(v.ok());
        EXPECT_EQ(v.err().code, error_code::invalid_header);
    }
}

// Found by fuzz/command_codec: apply took `now - last_write_ms` of a clock
// reading of -2^63 + 1 and one of 1.1e14, which overflows an int64.
TEST(MsBetween, NeverOverflowsAndNeverGoesBack) {
    EXPECT_EQ(ms_between(1000, 1500), 500u);
    EXPECT_EQ(ms_between(1500, 1000), 0u);
    EXPECT_EQ(ms_between(INT64_MIN, INT64_MAX), UINT64_MAX);
    EXPECT_EQ(ms_between(INT64_MAX, INT64_MIN), 0u);
    EXPECT_EQ(ms_between(-9223370276854775807LL, 113910186033153LL), 9223484187040808960u);
}

// Found by fuzz/headers: these rendered back as "-001-12-31T23:59:00.000Z"
// and "10000-01-01T00:00:59.000Z".
TEST(Rfc3339, RejectsOffsetsThatCarryTheInstantOutOfFourDigitYears) {
    for (const char* text : {"0000-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"}) {
        SCOPED_TRACE(text);
        const auto v = parse_rfc3339(text);
        ASSERT_FALSE(v.ok());
        EXPECT_EQ(v.err().code, error_code::invalid_header);
    }
    for (const char* text : {"0000-01-01T00:00:00Z", "0000-01-01T00:01:00+00:01",
                             "9999-12-31T23:59:59.999Z", "9999-12-31T23:58:59-00:01"}) {
        SCOPED_TRACE(text);
        const auto v = parse_rfc3339(text);
        ASSERT_TRUE(v.ok());
        EXPECT_EQ(parse_rfc3339(format_rfc3339(*v)).value(), *v);
    }
}

TEST(Rfc3339, LeapSecondIsAcceptedAndClampedToTheLastSecondOfTheMinute) {
    const auto leap = parse_rfc3339("2016-12-31T23:59:60Z");
    const auto before = parse_rfc3339("2016-12-31T23:59:59Z");
    ASSERT_TRUE(leap.ok());
    ASSERT_TRUE(before.ok());
    EXPECT_EQ(*leap, *before);
}

TEST(Rfc3339, FormatRendersUtcWithMilliseconds) {
    struct row {
        unix_ms instant;
        const char* text;
    };
    const row rows[] = {
        {0, "1970-01-01T00:00:00.000Z"},
        {1, "1970-01-01T00:00:00.001Z"},
        {-1, "1969-12-31T23:59:59.999Z"},
        {-1000, "1969-12-31T23:59:59.000Z"},
        {new_year_2024 + 123, "2024-01-01T00:00:00.123Z"},
        {1767323045678, "2026-01-02T03:04:05.678Z"},
        {1709208000000, "2024-02-29T12:00:00.000Z"},
        {253402300799999, "9999-12-31T23:59:59.999Z"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.text);
        EXPECT_EQ(format_rfc3339(r.instant), r.text);
    }
}

TEST(Rfc3339, FormatThenParseRoundTrips) {
    std::mt19937_64 rng(7);
    // 1900-01-01 .. 9999-12-31, the range the four-digit year can express.
    std::uniform_int_distribution<unix_ms> dist(-2208988800000, 253402300799999);
    for (int i = 0; i < 5000; ++i) {
        const unix_ms t = dist(rng);
        const std::string text = format_rfc3339(t);
        const auto back = parse_rfc3339(text);
        ASSERT_TRUE(back.ok()) << text;
        ASSERT_EQ(*back, t) << text;
    }
}

// -------------------------------------------------------- both headers

TEST(ParseExpiry, NeitherHeaderMeansNoExpiry) {
    const auto c = parse_expiry(std::nullopt, std::nullopt);
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->ttl_seconds.has_value());
    EXPECT_FALSE(c->expires_at.has_value());
    EXPECT_EQ(*c, expiry_config{});
}

TEST(ParseExpiry, TtlOnly) {
    const auto c = parse_expiry(std::string_view("60"), std::nullopt);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->ttl_seconds, 60u);
    EXPECT_FALSE(c->expires_at.has_value());
}

TEST(ParseExpiry, ExpiresAtOnly) {
    const auto c = parse_expiry(std::nullopt, std::string_view("2024-01-01T00:00:00Z"));
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->ttl_seconds.has_value());
    EXPECT_EQ(c->expires_at, new_year_2024);
}

TEST(ParseExpiry, BothHeadersAreRejectedEvenWhenEachIsValid) {
    const auto c = parse_expiry(std::string_view("60"), std::string_view("2024-01-01T00:00:00Z"));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, error_code::invalid_header);
}

TEST(ParseExpiry, InvalidValuesPropagateAsInvalidHeader) {
    {
        const auto c = parse_expiry(std::string_view("060"), std::nullopt);
        ASSERT_FALSE(c.ok());
        EXPECT_EQ(c.err().code, error_code::invalid_header);
    }
    {
        const auto c = parse_expiry(std::nullopt, std::string_view("2024-02-30T00:00:00Z"));
        ASSERT_FALSE(c.ok());
        EXPECT_EQ(c.err().code, error_code::invalid_header);
    }
    {
        // Present but empty is not the same as absent.
        const auto c = parse_expiry(std::string_view(""), std::nullopt);
        ASSERT_FALSE(c.ok());
    }
}

TEST(ParseExpiry, EqualConfigsCompareEqual) {
    const auto a = parse_expiry(std::nullopt, std::string_view("2024-01-01T02:00:00+02:00"));
    const auto b = parse_expiry(std::nullopt, std::string_view("2024-01-01T00:00:00Z"));
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
    const auto t = parse_expiry(std::string_view("60"), std::nullopt);
    ASSERT_TRUE(t.ok());
    EXPECT_NE(*a, *t);
}

}  // namespace
}  // namespace dstream::protocol
