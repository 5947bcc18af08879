#pragma once
// The socket type of one client connection: a Beast stream (timeouts) on the
// connection's own strand. The strand is named by its concrete type, not
// through any_io_executor: Beast takes a work guard on the stream's executor
// for every operation, and a type-erased strand is a heap allocation each
// time where a concrete one is a reference count.
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/basic_stream.hpp>

namespace dstream::edge {

using connection_executor = boost::asio::strand<boost::asio::io_context::executor_type>;
using connection_socket = boost::asio::ip::tcp::socket::rebind_executor<connection_executor>::other;
using connection_stream = boost::beast::basic_stream<boost::asio::ip::tcp, connection_executor>;

}  // namespace dstream::edge
