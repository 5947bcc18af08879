#pragma once
// GET {stream}?live=sse (base protocol 5.8, extensions 9.3): the read's
// events, then the stream's updates as they are applied, until the stream
// closes, the client leaves or the answer's lifetime ends.
#include <utility>  // boost/asio/awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>

#include "edge/exchange.h"
#include "edge/read_common.h"

namespace dstream::edge {

// `params` parsed from the request, with live == sse.
boost::asio::awaitable<void> handle_sse(exchange& ex, read_params params);

}  // namespace dstream::edge
