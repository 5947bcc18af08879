#pragma once
// The socket type of one client connection: a Beast stream (timeouts) on the
// connection's own strand. The strand is a compact one (runtime/
// compact_strand.h): Beast takes a work guard on the stream's executor for
// every operation and each awaitable handler holds a type-erased copy of it,
// which for Asio's own strand type is a heap allocation each time.
#include <cstddef>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "runtime/compact_strand.h"

namespace dstream::edge {

using connection_executor = runtime::compact_strand;
using connection_socket = boost::asio::ip::tcp::socket::rebind_executor<connection_executor>::other;
using connection_stream = boost::beast::basic_stream<boost::asio::ip::tcp, connection_executor>;
class tls_wire;  // edge/tls_wire.h
// TLS over the connection's stream, through a tls_wire, which keeps the
// timeouts: a deadline set on the TCP stream bounds the TLS operations too.
// Beast's wrapper coalesces a gather write of up to 16 KiB into one TLS
// record.
using tls_stream = boost::beast::ssl_stream<tls_wire>;

class h2_stream;

// Writes what the connection's socket takes now, without waiting: the count
// written, and an error only when the connection failed (a full socket is
// not one).
template <class ConstBuffers>
std::size_t write_without_waiting(connection_stream::socket_type& socket,
                                  const ConstBuffers& buffers, boost::system::error_code& ec) {
    ec = {};
    if (!socket.non_blocking()) socket.non_blocking(true, ec);
    const std::size_t written = ec ? 0 : socket.write_some(buffers, ec);
    if (ec == boost::asio::error::would_block) ec = {};
    return written;
}

// Where an exchange writes its answer: the connection's TCP stream, through
// TLS on a TLS connection, or an HTTP/2 stream (edge/h2_session.h) on either.
// A test of a pointer per write, not a virtual call: the plain path keeps its
// direct writes (edge/exchange.cc).
struct transport {
    // Plain HTTP/1.1 (implicit: a connection_stream is a transport).
    transport(connection_stream& stream) : tcp(&stream) {}  // NOLINT(google-explicit-constructor)
    transport(connection_stream& stream, tls_stream* over) : tcp(&stream), tls(over) {}
    transport(connection_stream& stream, h2_stream* over) : tcp(&stream), h2(over) {}

    connection_stream* tcp;     // the connection's socket and deadlines
    tls_stream* tls = nullptr;  // HTTP/1.1 over TLS
    h2_stream* h2 = nullptr;    // HTTP/2 (in clear or over TLS): the answer goes to the stream
};

}  // namespace dstream::edge
