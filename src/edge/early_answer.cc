#include "edge/early_answer.h"

#include <boost/beast/core/string.hpp>

#include "edge/headers.h"
#include "edge/routing.h"
#include "edge/subresource.h"
#include "edge/write_answer.h"

namespace dstream::edge {
namespace {

bool expects_continue(const request& head) {
    return boost::beast::iequals(head[http::field::expect], "100-continue");
}

// Sends an answer decided before the body; without a 100 Continue sent, the
// client may not send the body, so the connection closes.
boost::asio::awaitable<early_answer> send_before_body(exchange& ex, response& res) {
    const bool waiting = expects_continue(ex.req());
    if (waiting) ex.close_after();
    co_await ex.send(res);
    co_return waiting ? early_answer::close : early_answer::body_follows;
}

boost::asio::awaitable<early_answer> answer_producer(transport stream, request& head, route& target,
                                                     service::stream_service& service,
                                                     const edge_options& options,
                                                     answer_summary& summary) {
    // Malformed headers are step 1 of extensions 5.3: the normal path answers them.
    auto incarnation = incarnation_precondition(head);
    auto producer = producer_headers(head);
    if (!incarnation || !*incarnation || !producer || !*producer) co_return early_answer::none;

    state::append headers;
    headers.key = target.key;
    headers.producer = **producer;
    headers.if_incarnation = **incarnation;
    const auto answer = co_await service.answer_before_body(headers);
    if (!answer) co_return early_answer::none;

    summary.kind = request_kind::append;
    exchange ex(stream, head, std::move(target), query_params{}, &service, options, summary);
    response res = render_append_answer(ex, *answer, false);
    co_return co_await send_before_body(ex, res);
}

boost::asio::awaitable<early_answer> answer_part(
    transport stream, request& head, route& target, std::optional<std::uint64_t> content_length,
    service::stream_service& service, const edge_options& options, answer_summary& summary,
    std::unique_ptr<service::part_upload>& part_upload) {
    auto sub = parse_subresource(target.subresource);
    auto incarnation = incarnation_precondition(head);
    // Shape faults are the handler's to answer.
    if (!sub || sub->what != subresource::kind::snapshot_part || !incarnation) {
        co_return early_answer::none;
    }
    // A part without Content-Length counts as the largest request it may be.
    const std::uint64_t declared = content_length.value_or(options.max_request_bytes);
    service::part_admission admission =
        co_await service.admit_part(target.key, *incarnation, declared);
    if (!admission.answer.refusal) {
        part_upload = std::move(admission.upload);
        co_return early_answer::none;
    }
    summary.kind = request_kind::snapshot;
    exchange ex(stream, head, std::move(target), query_params{}, &service, options, summary);
    response res = render_parts_answer(ex, admission.answer, http::status::created);
    co_return co_await send_before_body(ex, res);
}

}  // namespace

bool routes_before_body(const request& head, const route& target, const edge_options& options) {
    if (options.cluster == nullptr) return false;
    // A request without its one Host is refused (dispatch) wherever it goes.
    const auto hosts = head.count(http::field::host);
    if (hosts > 1 || (hosts == 0 && head.version() >= 11)) return false;
    if (target.what != route::kind::stream && target.what != route::kind::stream_subresource) {
        return false;
    }
    const http::verb m = head.method();
    return m == http::verb::put || m == http::verb::post || m == http::verb::delete_;
}

boost::asio::awaitable<early_answer> route_before_body(transport stream, request& head,
                                                       route& target,
                                                       service::stream_service& service,
                                                       const edge_options& options,
                                                       answer_summary& summary) {
    const service::placement where = service.place(target.key);
    if (where.hosted && where.leads) co_return early_answer::none;
    if (target.what == route::kind::stream) {
        summary.kind = head.method() == http::verb::put    ? request_kind::create
                       : head.method() == http::verb::post ? request_kind::append
                                                           : request_kind::delete_stream;
    }
    exchange ex(stream, head, std::move(target), query_params{}, &service, options, summary);
    auto routed = route_elsewhere(ex, where, answered_by::leader);
    co_return co_await send_before_body(ex, *routed);
}

bool may_answer_before_body(const request& head, std::optional<std::uint64_t> content_length,
                            const route& target) {
    if (head.method() != http::verb::post) return false;
    if (target.what == route::kind::stream_subresource) return true;
    return target.what == route::kind::stream &&
           (expects_continue(head) || content_length.value_or(0) >= early_answer_min_body);
}

boost::asio::awaitable<early_answer> answer_before_body(
    transport stream, request& head, route& target, service::stream_service& service,
    const edge_options& options, answer_summary& summary,
    std::unique_ptr<service::part_upload>& part_upload,
    std::optional<std::uint64_t> content_length) {
    if (target.what == route::kind::stream_subresource) {
        co_return co_await answer_part(stream, head, target, content_length, service, options,
                                       summary, part_upload);
    }
    co_return co_await answer_producer(stream, head, target, service, options, summary);
}

}  // namespace dstream::edge
