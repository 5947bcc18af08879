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

boost::asio::awaitable<void> answer_error(exchange& ex, error_code code, std::string_view message) {
    response res = ex.make_error(make_error(code, std::string(message)));
    co_await ex.send(res);
}

boost::asio::awaitable<void> dispatch_subresource(exchange& ex) {
    auto sub = parse_subresource(ex.target().subresource);
    if (!sub) {
        co_await answer_error(ex, sub.err().code, sub.err().message);
        co_return;
    }
    const http::verb method = ex.req().method();
    switch (sub->what) {
        case subresource::kind::snapshot:
            if (method == http::verb::put || method == http::verb::get ||
                method == http::verb::head) {
                co_await handle_snapshot(ex, sub->offset);
                co_return;
            }
            break;
        case subresource::kind::retention:
            if (method == http::verb::put) {
                co_await handle_retention(ex, sub->offset);
                co_return;
            }
            break;
        case subresource::kind::bootstrap:
            if (method == http::verb::get) {
                co_await handle_bootstrap(ex);
                co_return;
            }
            break;
        case subresource::kind::immutable_chunk:
        case subresource::kind::immutable_snapshot:
            if (method != http::verb::get && method != http::verb::head) break;
            if (!ex.query().empty()) {
                co_await answer_error(ex, error_code::invalid_resource,
                                      "immutable resources take no query");
                co_return;
            }
            if (sub->what == subresource::kind::immutable_chunk) {
                co_await handle_immutable_chunk(ex, sub->token, sub->offset);
            } else {
                co_await handle_immutable_snapshot(ex, sub->token, sub->offset);
            }
            co_return;
        case subresource::kind::snapshot_part:
            if (method == http::verb::post) {
                co_await handle_part_upload(ex);
                co_return;
            }
            break;
        case subresource::kind::snapshot_parts:
            if (method == http::verb::delete_) {
                co_await handle_parts_discard(ex);
                co_return;
            }
            break;
        case subresource::kind::other:
            co_await answer_error(ex, error_code::not_found, "no such stream subresource");
            co_return;
    }
    co_await answer_error(ex, error_code::method_not_allowed,
                          "method not allowed on this resource");
}

}  // namespace

request_kind kind_of(const request& req, const result<route>& resolved,
                     const result<query_params>& query) {
    return resolved && query ? classify(*resolved, req.method(), *query) : request_kind::other;
}

boost::asio::awaitable<void> dispatch(exchange& ex, const result<route>& resolved,
                                      const result<query_params>& query) {
    const request& req = ex.req();
    // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400.
    if (req.version() >= 11 && req.count(http::field::host) == 0) {
        return answer_error(ex, error_code::invalid_request, "missing Host header");
    }
    if (!resolved) return answer_error(ex, resolved.err().code, resolved.err().message);
    if (!query) return answer_error(ex, query.err().code, query.err().message);
    if (req.method() == http::verb::options) return handle_options(ex);
    const route::kind what = ex.target().what;
    switch (what) {
        case route::kind::reserved:
            return answer_error(ex, error_code::not_found,
                                "subscription APIs are not available on this server");
        case route::kind::stream_subresource:
            return dispatch_subresource(ex);
        case route::kind::operator_path:
            return handle_operator(ex);
        case route::kind::none:
            return answer_error(ex, error_code::not_found, "no such route");
        default:
            break;
    }
    for (const auto& entry : route_table) {
        if (entry.what == what && entry.method == req.method()) return entry.handler(ex);
    }
    return answer_error(ex, error_code::method_not_allowed, "method not allowed on this resource");
}

}  // namespace dstream::edge
