#pragma once
// The route table: method and target -> handler.
#include <utility>
#include <boost/asio/awaitable.hpp>
#include "edge/connection_stream.h"

#include "edge/exchange.h"

namespace dstream::edge {

// Answers one request and reports the answer in `summary` (its `close`:
// the connection must close after it).
boost::asio::awaitable<void> dispatch(connection_stream& stream, request& req,
                                      service::stream_service& service, const edge_options& options,
                                      answer_summary& summary);

}  // namespace dstream::edge
