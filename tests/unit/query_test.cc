#include "edge/query.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace dstream::edge {
namespace {

using protocol::error_code;

query_params parse_ok(std::string_view q) {
    auto r = query_params::parse(q);
    EXPECT_TRUE(r.ok()) << q << ": " << (r.ok() ? "" : r.err().message);
    return r.ok() ? *r : query_params{};
}

std::optional<std::string> single_ok(const query_params& q, std::string_view name) {
    auto r = q.single(name);
    EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.err().message);
    return r.ok() ? *r : std::nullopt;
}

TEST(Query, EmptyQuery) {
    const auto q = parse_ok("");
    EXPECT_TRUE(q.empty());
    EXPECT_FALSE(q.has("offset"));
    EXPECT_EQ(single_ok(q, "offset"), std::nullopt);
}

TEST(Query, EmptyPairsAreSkipped) {
    for (const char* s : {"&", "&&", "&&&"}) {
        SCOPED_TRACE(s);
        EXPECT_TRUE(parse_ok(s).empty());
    }
    const auto q = parse_ok("&offset=-1&&live=sse&");
    EXPECT_FALSE(q.empty());
    EXPECT_EQ(single_ok(q, "offset"), "-1");
    EXPECT_EQ(single_ok(q, "live"), "sse");
}

TEST(Query, NamesAndValues) {
    const auto q = parse_ok("offset=00000000000000000012&live=long-poll&cursor=1000&flag&empty=");
    EXPECT_EQ(single_ok(q, "offset"), "00000000000000000012");
    EXPECT_EQ(single_ok(q, "live"), "long-poll");
    EXPECT_EQ(single_ok(q, "cursor"), "1000");
    EXPECT_TRUE(q.has("flag"));
    EXPECT_EQ(single_ok(q, "flag"), "");       // a name without '=' has an empty value
    EXPECT_EQ(single_ok(q, "empty"), "");
    EXPECT_FALSE(q.has("missing"));
    EXPECT_EQ(single_ok(q, "missing"), std::nullopt);
    // Names are case-sensitive.
    EXPECT_FALSE(q.has("Offset"));
}

TEST(Query, ValueMayContainEquals) {
    const auto q = parse_ok("a=b=c&d==");
    EXPECT_EQ(single_ok(q, "a"), "b=c");
    EXPECT_EQ(single_ok(q, "d"), "=");
}

TEST(Query, PercentAndPlusDecoding) {
    struct row {
        const char* query;
        const char* name;
        std::string value;
    };
    const row rows[] = {
        {"cursor=a%20b", "cursor", "a b"},
        {"cursor=a+b", "cursor", "a b"},
        {"cursor=a%2Bb", "cursor", "a+b"},
        {"cursor=%26%3D", "cursor", "&="},
        {"cur%73or=x", "cursor", "x"},          // names are decoded too
        {"my+name=1", "my name", "1"},
        {"v=%E2%82%AC", "v", "\xe2\x82\xac"},
        {"v=%00", "v", std::string(1, '\0')},
        {"v=%2541", "v", "%41"},
        {"offset=now", "offset", "now"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.query);
        const auto q = parse_ok(r.query);
        EXPECT_EQ(single_ok(q, r.name), r.value);
    }
}

TEST(Query, EncodedAmpersandDoesNotSplit) {
    const auto q = parse_ok("a=1%262&b=3");
    EXPECT_EQ(single_ok(q, "a"), "1&2");
    EXPECT_EQ(single_ok(q, "b"), "3");
}

TEST(Query, RepeatedParameterIsDetected) {
    for (const char* s : {"offset=1&offset=2", "offset=1&offset=1", "offset&offset",
                          "offset=-1&live=sse&offset=now", "off%73et=1&offset=2"}) {
        SCOPED_TRACE(s);
        const auto q = parse_ok(s);
        EXPECT_TRUE(q.has("offset"));
        const auto r = q.single("offset");
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, error_code::invalid_query);
        EXPECT_EQ(protocol::http_status(r.err().code), 400u);
    }
    // Another parameter's repetition does not affect a single one.
    const auto q = parse_ok("live=sse&cursor=1&cursor=2");
    EXPECT_EQ(single_ok(q, "live"), "sse");
    EXPECT_FALSE(q.single("cursor").ok());
}

TEST(Query, MalformedEscapesAreInvalidQuery) {
    for (const char* s : {"a=%", "a=%2", "a=%zz", "%=1", "a%g1=1", "ok=1&bad=%x"}) {
        SCOPED_TRACE(s);
        const auto r = query_params::parse(s);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, error_code::invalid_query);
    }
}

}  // namespace
}  // namespace dstream::edge
