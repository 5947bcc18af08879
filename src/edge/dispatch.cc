#include "edge/dispatch.h"

#include "edge/handlers.h"
#include "edge/http_metrics.h"
#include "edge/subresource.h"

namespace dstream::edge {
namespace {

using protocol::error_code;
using handler_fn = boost::asio::awaitable<void> (*)(exchange&);

struct route_entry {
    route::kind what;
    http::verb method;
    handler_fn handler;
};

constexpr route_entry route_table[] = {
    {route::kind::stream, http::verb::put, handle_create},
    {route::kind::stream, http::verb::post, handle_append},
    {route::kind::stream, http::verb::delete_, handle_delete},
    {route::kind::stream, http::verb::head, handle_head},
    {route::kind::stream, http::verb::get, handle_read},
    {route::kind::bucket, http::verb::put, handle_bucket},
};

// RFC 9110 15.5.6: a 405 names the methods the resource has.
constexpr std::string_view stream_methods = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
constexpr std::string_view bucket_methods = "PUT, OPTIONS";

boost::asio::awaitable<void> answer_error(exchange& ex, error_code code, std::string_view message) {
    response res = ex.make_error(make_error(code, std::string(message)));
    co_await ex.send(res);
}

boost::asio::awaitable<void> method_not_allowed(exchange& ex, std::string_view allow) {
    response res = ex.make_error(
        make_error(error_code::method_not_allowed, "method not allowed on this resource"));
    res.set(http::field::allow, boost::beast::string_view(allow.data(), allow.size()));
    co_await ex.send(res);
}

// immutable-reads 400: the earlier query form of an incarnation
// precondition or an aligned read is refused, so that a client relying on it
// is not served without the precondition it asked for.
bool names_earlier_query_form(const query_params& q) {
    return q.has("incarnation") || q.has("aligned");
}

boost::asio::awaitable<void> refuse_earlier_query_form(exchange& ex) {
    return answer_error(ex, error_code::unsupported,
                        "the incarnation and aligned query parameters are not supported: send "
                        "Stream-Incarnation as a header, or read "
                        "{stream}/incarnation/{token}/chunk/{offset}");
}

boost::asio::awaitable<void> dispatch_subresource(exchange& ex,
                                                  const result<query_params>& query) {
    auto sub = parse_subresource(ex.target().subresource);
    if (!sub) {
        co_await answer_error(ex, sub.err().code, sub.err().message);
        co_return;
    }
    if (sub->what == subresource::kind::other) {
        // extensions 1.6: any other path of three or more segments.
        co_await answer_error(ex, error_code::not_found, "no such stream subresource");
        co_return;
    }
    const http::verb method = ex.req().method();
    const bool immutable = sub->what == subresource::kind::immutable_chunk ||
                           sub->what == subresource::kind::immutable_snapshot;
    const bool allowed = [&] {
        switch (sub->what) {
            case subresource::kind::snapshot:
                return method == http::verb::put || method == http::verb::get ||
                       method == http::verb::head;
            case subresource::kind::retention:
                return method == http::verb::put;
            case subresource::kind::bootstrap:
                return method == http::verb::get;
            case subresource::kind::immutable_chunk:
            case subresource::kind::immutable_snapshot:
                return method == http::verb::get || method == http::verb::head;
            case subresource::kind::snapshot_part:
                return method == http::verb::post;
            case subresource::kind::snapshot_parts:
                return method == http::verb::delete_;
            case subresource::kind::other:
                break;
        }
        return false;
    }();
    if (!allowed) {
        co_await method_not_allowed(ex, allowed_methods(sub->what));
        co_return;
    }
    if (immutable && ex.has_query()) {
        // extensions 4.1: the path names everything these resources depend on.
        co_await answer_error(ex, error_code::query_not_accepted,
                              "immutable resources take no query");
        co_return;
    }
    if (!query) {
        co_await answer_error(ex, query.err().code, query.err().message);
        co_return;
    }
    switch (sub->what) {
        case subresource::kind::snapshot:
            if (names_earlier_query_form(ex.query())) {
                co_await refuse_earlier_query_form(ex);
            } else {
                co_await handle_snapshot(ex, sub->offset);
            }
            co_return;
        case subresource::kind::retention:
            co_await handle_retention(ex, sub->offset);
            co_return;
        case subresource::kind::bootstrap:
            co_await handle_bootstrap(ex);
            co_return;
        case subresource::kind::immutable_chunk:
            co_await handle_immutable_chunk(ex, sub->token, sub->offset);
            co_return;
        case subresource::kind::immutable_snapshot:
            co_await handle_immutable_snapshot(ex, sub->token, sub->offset);
            co_return;
        case subresource::kind::snapshot_part:
            co_await handle_part_upload(ex);
            co_return;
        case subresource::kind::snapshot_parts:
            co_await handle_parts_discard(ex);
            co_return;
        case subresource::kind::other:
            break;
    }
}

}  // namespace

request_kind kind_of(const request& req, const result<route>& resolved,
                     const result<query_params>& query) {
    return resolved && query ? classify(*resolved, req.method(), *query) : request_kind::other;
}

boost::asio::awaitable<void> dispatch(exchange& ex, const result<route>& resolved,
                                      const result<query_params>& query) {
    const request& req = ex.req();
    // RFC 9112 3.2: an HTTP/1.1 request without Host, or with more than
    // one, is a 400.
    const auto hosts = req.count(http::field::host);
    if ((req.version() >= 11 && hosts == 0) || hosts > 1) {
        return answer_error(ex, error_code::invalid_request,
                            hosts == 0 ? "missing Host header" : "more than one Host header");
    }
    if (!resolved) return answer_error(ex, resolved.err().code, resolved.err().message);
    if (req.method() == http::verb::options) return handle_options(ex);
    const route::kind what = ex.target().what;
    switch (what) {
        case route::kind::reserved:
            return answer_error(ex, error_code::not_found,
                                "subscription APIs are not available on this server");
        case route::kind::stream_subresource:
            return dispatch_subresource(ex, query);
        case route::kind::operator_path:
            return handle_operator(ex);
        case route::kind::none:
            return answer_error(ex, error_code::not_found, "no such route");
        default:
            break;
    }
    if (!query) return answer_error(ex, query.err().code, query.err().message);
    if (what == route::kind::stream && names_earlier_query_form(ex.query())) {
        return refuse_earlier_query_form(ex);
    }
    for (const auto& entry : route_table) {
        if (entry.what == what && entry.method == req.method()) return entry.handler(ex);
    }
    return method_not_allowed(ex, what == route::kind::bucket ? bucket_methods : stream_methods);
}

}  // namespace dstream::edge
