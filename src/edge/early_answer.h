#pragma once
// Answers before the body.
//
// extensions 5.7: in a cluster, a write whose stream's group this node does
// not lead is redirected (or answered NO_LEADER) before any of its body is
// read, so a proxy that sent `Expect: 100-continue` sends the body elsewhere.
//
// extensions 5.5: a producer write that carries Stream-Incarnation, after
// `Expect: 100-continue` or with a declared body of 64 KiB or more, is
// answered from its headers when it is a repeat or a key conflict, so the
// client need not upload (or the server stage) the body.
//
// extensions 2.2: a snapshot part is decided from its head (404, 412, 429
// past a staging bound, 501 without a cold store); an admitted part counts
// its Content-Length against the bounds while its body uploads.
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "edge/connection_stream.h"
#include "edge/exchange.h"

namespace dstream::edge {

enum class early_answer {
    none,          // go on: read the body and dispatch as usual
    body_follows,  // answered; the body is on its way and must be read and dropped
    close,         // answered after 100-continue was not sent: close the connection
};

inline constexpr std::uint64_t early_answer_min_body = 64 * 1024;

// Whether a request may be answered before its body: a POST of a snapshot
// part, or of an append with `Expect: 100-continue` or a body of
// early_answer_min_body or more. Most requests are not, and need no
// coroutine to find out.
bool may_answer_before_body(const request& head, std::optional<std::uint64_t> content_length,
                            const route& target);

// extensions 5.7: in a cluster, a write (a PUT, POST or DELETE of a stream
// or of its subresources) is routed before its body is read.
bool routes_before_body(const request& head, const route& target, const edge_options& options);

// For a request routes_before_body() chose: the 307 or 503 when this node
// does not lead the stream's group (or hosts none of it); none otherwise.
boost::asio::awaitable<early_answer> route_before_body(transport stream, request& head,
                                                       route& target,
                                                       service::stream_service& service,
                                                       const edge_options& options,
                                                       answer_summary& summary);

// For a request may_answer_before_body() chose. The answer goes in
// `summary`; `part_upload` receives an admitted part, to be handed to
// the exchange that answers it. `target` is taken only when the request is answered here.
boost::asio::awaitable<early_answer> answer_before_body(
    transport stream, request& head, route& target, service::stream_service& service,
    const edge_options& options, answer_summary& summary,
    std::unique_ptr<service::part_upload>& part_upload,
    std::optional<std::uint64_t> content_length);

}  // namespace dstream::edge
