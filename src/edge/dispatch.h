#pragma once
// The route table: method and target -> handler.
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "edge/connection_stream.h"
#include "edge/exchange.h"

namespace dstream::edge {

// What the metrics count a request as, from its target's route and query.
request_kind kind_of(const request& req, const result<route>& resolved,
                     const result<query_params>& query);

// Answers the exchange's request, made from `resolved` and `query` when
// they hold no error (their values moved into the exchange: only their
// errors are read here). A plain function: it picks the handler (or the error
// answer) and hands back its awaitable, so the request costs no coroutine
// frame of its own; the caller's frame holds the exchange and the results,
// which must outlive the awaitable.
boost::asio::awaitable<void> dispatch(exchange& ex, const result<route>& resolved,
                                      const result<query_params>& query);

// The admin listener's one route: every request must carry the bearer token
// when one is set (401 INVALID_CREDENTIAL otherwise), and goes to the
// admin plane when its path is under /__ursula/ (404 NOT_FOUND otherwise).
boost::asio::awaitable<void> dispatch_admin(exchange& ex);

}  // namespace dstream::edge
