#pragma once
// The route table: method and target -> handler.
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "edge/connection_stream.h"
#include "edge/exchange.h"

namespace dstream::edge {

// The route of a request's target (its path, without the query).
result<route> route_of(const request& req);

// Answers one request, whose route_of() is `resolved` (taken away), and
// reports the answer in `summary` (its `close`: the connection must close
// after it). `part_upload`: what answer_before_body() admitted for the
// request, if anything.
boost::asio::awaitable<void> dispatch(connection_stream& stream, request& req,
                                      result<route>& resolved, service::stream_service& service,
                                      const edge_options& options, answer_summary& summary,
                                      std::unique_ptr<service::part_upload>& part_upload);

}  // namespace dstream::edge
