#pragma once
// The socket type of one client connection: a Beast stream (timeouts) on the
// connection's own strand. The strand is a compact one (runtime/
// compact_strand.h): Beast takes a work guard on the stream's executor for
// every operation and each awaitable handler holds a type-erased copy of it,
// which for Asio's own strand type is a heap allocation each time.
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/basic_stream.hpp>

#include "runtime/compact_strand.h"

namespace dstream::edge {

using connection_executor = runtime::compact_strand;
using connection_socket = boost::asio::ip::tcp::socket::rebind_executor<connection_executor>::other;
using connection_stream = boost::beast::basic_stream<boost::asio::ip::tcp, connection_executor>;

}  // namespace dstream::edge
