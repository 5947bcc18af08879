#include "edge/early_answer.h"

#include <boost/beast/core/string.hpp>

#include "edge/headers.h"
#include "edge/write_answer.h"

namespace dstream::edge {

boost::asio::awaitable<early_answer> answer_before_body(
    connection_stream& stream, request& head, std::optional<std::uint64_t> content_length,
    service::stream_service& service, const edge_options& options, answer_summary& summary) {
    const bool expects_continue = boost::beast::iequals(head[http::field::expect], "100-continue");
    if (head.method() != http::verb::post ||
        (!expects_continue && content_length.value_or(0) < early_answer_min_body)) {
        co_return early_answer::none;
    }
    const std::string_view target(head.target().data(), head.target().size());
    auto resolved = resolve_route(target.substr(0, target.find('?')));
    if (!resolved || resolved->what != route::kind::stream) co_return early_answer::none;
    // Malformed headers are step 1 of extensions 5.3: the normal path answers them.
    auto incarnation = incarnation_precondition(head);
    auto producer = producer_headers(head);
    if (!incarnation || !*incarnation || !producer || !*producer) co_return early_answer::none;

    const state::append headers{resolved->key, {}, {}, false, std::nullopt, **producer, **incarnation, std::nullopt};
    const auto answer = co_await service.answer_before_body(headers);
    if (!answer) co_return early_answer::none;

    summary.kind = request_kind::append;
    exchange ex(stream, head, std::move(*resolved), query_params{}, &service, options, summary);
    if (expects_continue) ex.close_after();
    response res = render_append_answer(ex, *answer, false);
    co_await ex.send(res);
    co_return expects_continue ? early_answer::close : early_answer::body_follows;
}

}  // namespace dstream::edge
