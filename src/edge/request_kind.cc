#include "edge/request_kind.h"

#include "edge/subresource.h"

namespace dstream::edge {
namespace {

using verb = boost::beast::http::verb;

request_kind classify_stream(verb method, const query_params& q) {
    switch (method) {
        case verb::put:
            return request_kind::create;
        case verb::post:
            return request_kind::append;
        case verb::delete_:
            return request_kind::delete_stream;
        case verb::head:
            return request_kind::head;
        case verb::get:
            break;
        default:
            return request_kind::other;
    }
    const auto live = q.single("live");
    if (!live || !*live) return request_kind::read;
    if (**live == "long-poll") return request_kind::long_poll;
    if (**live == "sse") return request_kind::sse;
    return request_kind::read;
}

request_kind classify_subresource(std::span<const std::string> segments) {
    const auto sub = parse_subresource(segments);
    if (!sub) return request_kind::other;
    switch (sub->what) {
        case subresource::kind::snapshot:
        case subresource::kind::snapshot_parts:
        case subresource::kind::snapshot_part:
            return request_kind::snapshot;
        case subresource::kind::retention:
            return request_kind::retention;
        case subresource::kind::bootstrap:
            return request_kind::bootstrap;
        case subresource::kind::immutable_chunk:
        case subresource::kind::immutable_snapshot:
            return request_kind::immutable;
        case subresource::kind::other:
            break;
    }
    return request_kind::other;
}

}  // namespace

std::string_view name(request_kind kind) {
    switch (kind) {
        case request_kind::create:
            return "create";
        case request_kind::append:
            return "append";
        case request_kind::delete_stream:
            return "delete";
        case request_kind::head:
            return "head";
        case request_kind::read:
            return "read";
        case request_kind::long_poll:
            return "long_poll";
        case request_kind::sse:
            return "sse";
        case request_kind::snapshot:
            return "snapshot";
        case request_kind::retention:
            return "retention";
        case request_kind::bootstrap:
            return "bootstrap";
        case request_kind::immutable:
            return "immutable";
        case request_kind::bucket:
            return "bucket";
        case request_kind::options:
            return "options";
        case request_kind::operator_route:
            return "operator";
        case request_kind::other:
            break;
    }
    return "other";
}

request_kind classify(const route& r, verb method, const query_params& q) {
    if (method == verb::options) return request_kind::options;
    switch (r.what) {
        case route::kind::stream:
            return classify_stream(method, q);
        case route::kind::stream_subresource:
            return classify_subresource(r.subresource);
        case route::kind::bucket:
            return request_kind::bucket;
        case route::kind::operator_path:
            return request_kind::operator_route;
        case route::kind::reserved:
        case route::kind::none:
            break;
    }
    return request_kind::other;
}

}  // namespace dstream::edge
