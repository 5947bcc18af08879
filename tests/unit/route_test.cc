#include "edge/route.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

using protocol::error_code;

route resolve_ok(const std::string& path) {
    auto r = resolve_route(path);
    EXPECT_TRUE(r.ok()) << path << ": " << (r.ok() ? "" : r.err().message);
    return r.ok() ? *r : route{};
}

void expect_error(const std::string& path, error_code code) {
    SCOPED_TRACE(path);
    const auto r = resolve_route(path);
    ASSERT_FALSE(r.ok()) << "resolved to key '" << r->key << "'";
    EXPECT_EQ(r.err().code, code) << protocol::wire_code(r.err().code) << ": " << r.err().message;
}

// ------------------------------------------------------------- percent_decode

TEST(PercentDecode, DecodesEscapesInEitherCase) {
    struct row {
        const char* in;
        bool plus_is_space;
        std::string out;
    };
    const row rows[] = {
        {"", false, ""},
        {"abc", false, "abc"},
        {"a%20b", false, "a b"},
        {"%2F%2f", false, "//"},
        {"%41%42%43", false, "ABC"},
        {"%e2%82%ac", false, "\xe2\x82\xac"},
        {"%00", false, std::string(1, '\0')},
        {"%ff", false, "\xff"},
        {"a+b", false, "a+b"},
        {"a+b", true, "a b"},
        {"%2B", true, "+"},
        {"%25", false, "%"},
        {"%2541", false, "%41"},  // decoded once only
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.in);
        const auto d = percent_decode(r.in, r.plus_is_space);
        ASSERT_TRUE(d.ok());
        EXPECT_EQ(*d, r.out);
    }
}

TEST(PercentDecode, RejectsMalformedEscapes) {
    for (const char* in :
         {"%", "%2", "a%", "a%2", "%g0", "%0g", "%zz", "%%", "% 1", "%-1", "%+1"}) {
        SCOPED_TRACE(in);
        const auto d = percent_decode(in, false);
        ASSERT_FALSE(d.ok());
        EXPECT_EQ(d.err().code, error_code::invalid_request);
    }
}

// ------------------------------------------------------------- base surface

TEST(RouteV1, StreamIdIsPercentDecoded) {
    const route r = resolve_ok("/v1/stream/my%20stream");
    EXPECT_EQ(r.what, route::kind::stream);
    EXPECT_EQ(r.where, surface::base_v1);
    EXPECT_EQ(r.key, "v1/stream/my stream");
}

TEST(RouteV1, PlainIds) {
    struct row {
        const char* path;
        const char* key;
    };
    const row rows[] = {
        {"/v1/stream/abc", "v1/stream/abc"},
        {"/v1/stream/a", "v1/stream/a"},
        {"/v1/stream/A-B_c.d", "v1/stream/A-B_c.d"},
        {"/v1/stream/%E2%82%AC", "v1/stream/\xe2\x82\xac"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.path);
        const route got = resolve_ok(r.path);
        EXPECT_EQ(got.what, route::kind::stream);
        EXPECT_EQ(got.where, surface::base_v1);
        EXPECT_EQ(got.key, r.key);
    }
}

TEST(RouteV1, DsPathIsReserved) {
    for (const char* p : {"/v1/stream/__ds", "/v1/stream/__ds/subscriptions", "/v1/stream/__ds/x/y",
                          "/v1/stream/%5F%5Fds"}) {
        SCOPED_TRACE(p);
        const route r = resolve_ok(p);
        EXPECT_EQ(r.what, route::kind::reserved);
        EXPECT_EQ(r.where, surface::base_v1);
        EXPECT_TRUE(r.key.empty());
    }
    // Only the exact segment is reserved.
    const route r = resolve_ok("/v1/stream/__dsx");
    EXPECT_EQ(r.what, route::kind::stream);
}

TEST(RouteV1, InvalidIds) {
    expect_error("/v1/stream/", error_code::invalid_stream_id);
    expect_error("/v1/stream/a%00b", error_code::invalid_stream_id);
    expect_error("/v1/stream/" + std::string(123, 'x'), error_code::invalid_stream_id);
    EXPECT_EQ(resolve_ok("/v1/stream/" + std::string(122, 'x')).what, route::kind::stream);
    expect_error("/v1/stream/%zz", error_code::invalid_request);
    expect_error("/v1/stream/abc%", error_code::invalid_request);
    expect_error("/v1/stream/abc%4", error_code::invalid_request);
}

// ------------------------------------------------------------- operator and odd targets

TEST(RouteOperator, UrsulaPathsAreOperatorRoutes) {
    for (const char* p : {"/__ursula", "/__ursula/", "/__ursula/metrics", "/__ursula/a/b/c"}) {
        SCOPED_TRACE(p);
        const route r = resolve_ok(p);
        EXPECT_EQ(r.what, route::kind::operator_path);
        EXPECT_EQ(r.path, p);
    }
    // A bucket that merely starts with the same letters is a bucket.
    EXPECT_EQ(resolve_ok("/__ursulax").what, route::kind::bucket);
}

TEST(RouteTarget, RelativeOrEmptyTargetIsInvalidRequest) {
    expect_error("", error_code::invalid_request);
    expect_error("v1/stream/x", error_code::invalid_request);
    expect_error("*", error_code::invalid_request);
}

TEST(RouteTarget, RootAndEmptyFirstSegmentRouteToNothing) {
    EXPECT_EQ(resolve_ok("/").what, route::kind::none);
    EXPECT_EQ(resolve_ok("//x").what, route::kind::none);
}

// ------------------------------------------------------------- buckets

TEST(RouteBucket, BucketIdRegex) {
    struct row {
        std::string id;
        bool valid;
    };
    const row rows[] = {
        {"abcd", true},
        {"a-b_", true},
        {"0123", true},
        {"____", true},
        {"----", true},
        {std::string(64, 'z'), true},
        {"abc", false},                 // too short
        {std::string(65, 'z'), false},  // too long
        {"", false},
        {"ABCD", false},  // uppercase
        {"abcD", false},
        {"ab.c", false},
        {"ab c", false},
        {"ab%c", false},
        {"abc\xc3\xa9", false},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.id);
        EXPECT_EQ(is_valid_bucket_id(r.id), r.valid);
    }
}

TEST(RouteBucket, BucketPaths) {
    for (const char* p : {"/mybucket", "/mybucket/"}) {
        SCOPED_TRACE(p);
        const route r = resolve_ok(p);
        EXPECT_EQ(r.what, route::kind::bucket);
        EXPECT_EQ(r.bucket, "mybucket");
        EXPECT_EQ(r.where, surface::bucketed);
    }
    // A percent-encoded bucket id is decoded before it is checked.
    const route r = resolve_ok("/my%62ucket");
    EXPECT_EQ(r.what, route::kind::bucket);
    EXPECT_EQ(r.bucket, "mybucket");
}

TEST(RouteBucket, InvalidBucketIds) {
    for (const std::string& p :
         std::vector<std::string>{"/abc", "/ABCD", "/abc.d", "/abc/stream", "/ABCD/stream",
                                  "/" + std::string(65, 'a') + "/s", "/v1/x", "/v1/stream"}) {
        expect_error(p, error_code::invalid_bucket_id);
    }
}

// ------------------------------------------------------------- bucketed streams

TEST(RouteBucketed, StreamPathsAndDecoding) {
    struct row {
        const char* path;
        const char* key;
    };
    const row rows[] = {
        {"/mybucket/stream", "mybucket/stream"},
        {"/mybucket/my%20stream", "mybucket/my stream"},
        {"/mybucket/a+b", "mybucket/a+b"},  // '+' is not a space in a path
        {"/mybucket/%E2%82%AC", "mybucket/\xe2\x82\xac"},
        {"/mybucket/x$", "mybucket/x$"},  // '$' only reserved at the start
        {"/mybucket/Streams", "mybucket/Streams"},
        {"/mybucket/streams2", "mybucket/streams2"},
        {"/mybucket/snapshot", "mybucket/snapshot"},  // reserved words stay valid ids
        {"/mybucket/bootstrap", "mybucket/bootstrap"},
        {"/mybucket/incarnation", "mybucket/incarnation"},
        {"/mybucket/retention", "mybucket/retention"},
        {"/mybucket/.", "mybucket/."},
        {"/mybucket/a.b", "mybucket/a.b"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.path);
        const route got = resolve_ok(r.path);
        EXPECT_EQ(got.what, route::kind::stream);
        EXPECT_EQ(got.where, surface::bucketed);
        EXPECT_EQ(got.key, r.key);
    }
}

TEST(RouteBucketed, InvalidStreamIds) {
    for (const char* p : {
             "/mybucket//",          // empty stream id
             "/mybucket//snapshot",  // empty stream id with a subresource
             "/mybucket/..",
             "/mybucket/a..b",
             "/mybucket/%2E%2E",  // encoded ..
             "/mybucket/streams",
             "/mybucket/$x",
             "/mybucket/%24x",  // encoded $
             "/mybucket/$transaction",
             "/mybucket/a%00b",
         }) {
        expect_error(p, error_code::invalid_stream_id);
    }
}

TEST(RouteBucketed, StreamIdLengthLimits) {
    // The stream id alone is at most 122 bytes.
    expect_error("/abcd/" + std::string(123, 's'), error_code::invalid_stream_id);
    // Combined key: bucket + '/' + stream <= 122 bytes.
    const std::string bucket4 = "abcd";
    EXPECT_EQ(resolve_ok("/" + bucket4 + "/" + std::string(117, 's')).what, route::kind::stream);
    expect_error("/" + bucket4 + "/" + std::string(118, 's'), error_code::invalid_stream_id);
    const std::string bucket64(64, 'b');
    EXPECT_EQ(resolve_ok("/" + bucket64 + "/" + std::string(57, 's')).key.size(), 122u);
    expect_error("/" + bucket64 + "/" + std::string(58, 's'), error_code::invalid_stream_id);
    // Lengths count decoded bytes, not the escaped form.
    std::string escaped;
    for (int i = 0; i < 117; ++i) escaped += "%41";
    const route r = resolve_ok("/" + bucket4 + "/" + escaped);
    EXPECT_EQ(r.key, bucket4 + "/" + std::string(117, 'A'));
    expect_error("/" + bucket4 + "/" + escaped + "%41", error_code::invalid_stream_id);
}

TEST(RouteBucketed, ThreeOrMoreSegmentsAreASubresource) {
    struct row {
        const char* path;
        const char* key;
        std::vector<std::string> sub;
    };
    const row rows[] = {
        {"/mybucket/s/snapshot", "mybucket/s", {"snapshot"}},
        {"/mybucket/s/snapshot/00000000000000000012", "mybucket/s",
         {"snapshot", "00000000000000000012"}},
        {"/mybucket/s/snapshot/parts", "mybucket/s", {"snapshot", "parts"}},
        {"/mybucket/s/bootstrap", "mybucket/s", {"bootstrap"}},
        {"/mybucket/s/incarnation/4503599627370496/chunk/00000000000000000000", "mybucket/s",
         {"incarnation", "4503599627370496", "chunk", "00000000000000000000"}},
        {"/mybucket/s/retention/00000000000000000005", "mybucket/s",
         {"retention", "00000000000000000005"}},
        // RFC 3986 2.2: split first, then decode: an escaped '/' is data.
        {"/mybucket/s/a%2Fb", "mybucket/s", {"a/b"}},
        {"/mybucket/s/snapshot%2F00000000000000000012", "mybucket/s",
         {"snapshot/00000000000000000012"}},
        {"/mybucket/s/x/y/z", "mybucket/s", {"x", "y", "z"}},
        {"/mybucket/s/snapshot/", "mybucket/s", {"snapshot", ""}},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.path);
        const route got = resolve_ok(r.path);
        EXPECT_EQ(got.what, route::kind::stream_subresource);
        EXPECT_EQ(got.where, surface::bucketed);
        EXPECT_EQ(got.key, r.key);
        EXPECT_EQ(got.subresource, r.sub);
    }
}

// extensions 8 and immutable-reads' 400 row: a segment that is not UTF-8
// once decoded is the router's refusal, whichever segment it is.
TEST(RouteBucketed, SegmentsThatAreNotUtf8AreInvalidRequest) {
    const char* bad[] = {"%FF%FE", "%C0%AF", "%ED%A0%80", "%E2%82", "%80", "a%F4%90%80%80"};
    for (const char* segment : bad) {
        SCOPED_TRACE(segment);
        expect_error(std::string("/mybucket/") + segment, error_code::invalid_request);
        expect_error(std::string("/") + segment + "/s", error_code::invalid_request);
        expect_error(std::string("/mybucket/s/snapshot/") + segment, error_code::invalid_request);
        expect_error(std::string("/mybucket/s/incarnation/") + segment +
                         "/chunk/00000000000000000000",
                     error_code::invalid_request);
        expect_error(std::string("/v1/stream/") + segment, error_code::invalid_request);
    }
    // Well-formed multi-byte characters are ids like any other.
    EXPECT_EQ(resolve_ok("/mybucket/%C3%A9t%C3%A9%F0%9F%98%80").key, "mybucket/\xC3\xA9t\xC3\xA9\xF0\x9F\x98\x80");
    EXPECT_EQ(resolve_ok("/v1/stream/%E2%82%AC").key, "v1/stream/\xE2\x82\xAC");
}

TEST(RouteBucketed, SubresourceStillValidatesTheStreamId) {
    expect_error("/mybucket/$x/snapshot", error_code::invalid_stream_id);
    expect_error("/mybucket/../snapshot", error_code::invalid_stream_id);
    expect_error("/mybucket/streams/bootstrap", error_code::invalid_stream_id);
    expect_error("/abcd/" + std::string(118, 's') + "/snapshot", error_code::invalid_stream_id);
}

TEST(RouteBucketed, BadPercentEscapesAreInvalidRequest) {
    for (const char* p : {"/mybucket/a%zz", "/mybucket/a%", "/mybucket/a%2", "/my%zzbucket/s",
                          "/mybucket/s/snap%shot", "/mybucket/s/%"}) {
        expect_error(p, error_code::invalid_request);
    }
}

TEST(RouteBucketed, EncodedSlashInStreamIdIsRejected) {
    expect_error("/mybucket/a%2Fb", error_code::invalid_stream_id);
    expect_error("/mybucket/%2F", error_code::invalid_stream_id);
    expect_error("/mybucket/a%2fb/snapshot", error_code::invalid_stream_id);
}

TEST(RequestTarget, SplitsPathAndQuery) {
    auto t = split_request_target("/b/s?offset=-1&live=sse");
    EXPECT_EQ(t.path, "/b/s");
    EXPECT_EQ(t.query, "offset=-1&live=sse");
    EXPECT_TRUE(t.has_query);
    t = split_request_target("/b/s");
    EXPECT_EQ(t.path, "/b/s");
    EXPECT_EQ(t.query, "");
    EXPECT_FALSE(t.has_query);
    t = split_request_target("/b/s?");
    EXPECT_EQ(t.path, "/b/s");
    EXPECT_EQ(t.query, "");
    EXPECT_TRUE(t.has_query);
}

TEST(RequestTarget, AbsoluteFormKeepsOnlyThePath) {
    auto t = split_request_target("http://127.0.0.1:4437/b/s?offset=-1");
    EXPECT_EQ(t.path, "/b/s");
    EXPECT_EQ(t.query, "offset=-1");
    EXPECT_EQ(split_request_target("https://example.com").path, "/");
    EXPECT_EQ(split_request_target("http://").path, "/");
}

}  // namespace
}  // namespace dstream::edge
