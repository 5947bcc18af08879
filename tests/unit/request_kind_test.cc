// The route label of the HTTP metrics: live reads apart from catch-up reads,
// subresources by what they are.
#include "edge/request_kind.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "edge/http_metrics.h"

namespace dstream::edge {
namespace {

using verb = boost::beast::http::verb;

request_kind kind_of(const std::string& path, verb method, const std::string& query = "") {
    auto r = resolve_route(path);
    auto q = query_params::parse(query);
    EXPECT_TRUE(r.ok() && q.ok()) << path << "?" << query;
    return r.ok() && q.ok() ? classify(*r, method, *q) : request_kind::other;
}

TEST(RequestKind, StreamOperationsByMethod) {
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::put), request_kind::create);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::post), request_kind::append);
    EXPECT_EQ(kind_of("/v1/stream/s", verb::delete_), request_kind::delete_stream);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::head), request_kind::head);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::patch), request_kind::other);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::options), request_kind::options);
}

TEST(RequestKind, LiveReadsAreTheirOwnKinds) {
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::get, "offset=-1"), request_kind::read);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::get, "offset=now&live=long-poll"),
              request_kind::long_poll);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::get, "offset=now&live=sse"), request_kind::sse);
    EXPECT_EQ(kind_of("/mybucket/mystream", verb::get, "live=bogus"), request_kind::read);
}

TEST(RequestKind, SubresourcesBucketsAndOperatorRoutes) {
    EXPECT_EQ(kind_of("/mybucket/mystream/snapshot/00000000000000000000", verb::put),
              request_kind::snapshot);
    EXPECT_EQ(kind_of("/mybucket/mystream/snapshot/00000000000000000000/parts", verb::put),
              request_kind::snapshot);
    EXPECT_EQ(kind_of("/mybucket/mystream/retention/00000000000000000000", verb::put),
              request_kind::retention);
    EXPECT_EQ(kind_of("/mybucket/mystream/bootstrap", verb::get), request_kind::bootstrap);
    EXPECT_EQ(kind_of("/mybucket/mystream/nothing-here", verb::get), request_kind::other);
    EXPECT_EQ(kind_of("/mybucket", verb::put), request_kind::bucket);
    EXPECT_EQ(kind_of("/__ursula/metrics", verb::get), request_kind::operator_route);
}

TEST(RequestKind, EveryKindHasADistinctLabel) {
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < request_kind_count; ++i) {
        names.insert(name(static_cast<request_kind>(i)));
    }
    EXPECT_EQ(names.size(), request_kind_count);
    EXPECT_EQ(name(request_kind::other), "other");
}

TEST(HttpMetrics, CountsByKindAndStatusAndIgnoresNoAnswer) {
    http_metrics& m = http_metrics::get();
    const auto before =
        m.of(request_kind::bucket).by_status[404 - http_metrics::first_status].value();
    m.record(request_kind::bucket, 404, 10);
    m.record(request_kind::bucket, 0, 10);
    EXPECT_EQ(m.of(request_kind::bucket).by_status[404 - http_metrics::first_status].value(),
              before + 1);
    const std::string text = metrics::node_registry().render();
    EXPECT_NE(text.find("dstream_http_requests_total{route=\"bucket\",status=\"404\"}"),
              std::string::npos);
}

}  // namespace
}  // namespace dstream::edge
