#pragma once
// The route table: method and target -> handler.
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "edge/connection_stream.h"
#include "edge/exchange.h"

namespace dstream::edge {

// Answers one request; returns true when the connection must close after it.
boost::asio::awaitable<bool> dispatch(connection_stream& stream, request& req,
                                      service::stream_service& service,
                                      const edge_options& options);

}  // namespace dstream::edge
