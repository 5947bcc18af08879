#pragma once
// extensions 5.5, answers before the body: a producer write that carries
// Stream-Incarnation, after `Expect: 100-continue` or with a declared body of
// 64 KiB or more, is answered from its headers when it is a repeat or a key
// conflict, so the client need not upload (or the server stage) the body.
#include <utility>
#include <boost/asio/awaitable.hpp>
#include "edge/connection_stream.h"
#include <optional>

#include "edge/exchange.h"

namespace dstream::edge {

enum class early_answer {
    none,         // go on: read the body and dispatch as usual
    body_follows, // answered; the body is on its way and must be read and dropped
    close,        // answered after 100-continue was not sent: close the connection
};

inline constexpr std::uint64_t early_answer_min_body = 64 * 1024;

boost::asio::awaitable<early_answer> answer_before_body(
    connection_stream& stream, request& head, std::optional<std::uint64_t> content_length,
    service::stream_service& service, const edge_options& options, answer_summary& summary);

}  // namespace dstream::edge
