#pragma once
// The route table: method and target -> handler.
#include <utility>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "edge/exchange.h"

namespace dstream::edge {

// Answers one request; returns true when the connection must close after it.
// `part_upload`: what answer_before_body() admitted for the request, if anything.
boost::asio::awaitable<bool> dispatch(boost::beast::tcp_stream& stream, request& req,
                                      service::stream_service& service, const edge_options& options,
                                      std::unique_ptr<service::part_upload>& part_upload);

}  // namespace dstream::edge
