#pragma once
// The TCP side of a TLS connection: what OpenSSL's records are written to.
//
// Asynchronous reads and writes go to the connection's stream (its
// deadlines apply). A synchronous write never waits: the socket takes what
// it can at once, and the rest of the records is held here. That lets an
// HTTP/1.1 answer be encrypted and sent without an asynchronous operation
// when the socket takes it whole, which it nearly always does, as the plain
// path does (edge/exchange.cc). A record the engine made cannot be handed
// back half written, so whoever writes synchronously sends what is held
// (held(), then release_held()) before anything else is written; an
// asynchronous write never starts while bytes are held.
#include <cassert>
#include <cstddef>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include "edge/connection_stream.h"

namespace dstream::edge {

class tls_wire {
public:
    using executor_type = connection_stream::executor_type;
    using lowest_layer_type = connection_stream::socket_type;

    explicit tls_wire(connection_stream& stream) : _stream(&stream) {}

    executor_type get_executor() noexcept { return _stream->get_executor(); }
    lowest_layer_type& lowest_layer() noexcept { return _stream->socket(); }
    const lowest_layer_type& lowest_layer() const noexcept { return _stream->socket(); }

    template <class ConstBuffers>
    std::size_t write_some(const ConstBuffers& buffers, boost::system::error_code& ec) {
        ec = {};
        const std::size_t size = boost::asio::buffer_size(buffers);
        std::size_t sent = 0;
        if (_held.empty()) {
            auto& socket = _stream->socket();
            if (!socket.non_blocking()) socket.non_blocking(true, ec);
            if (!ec) sent = socket.write_some(buffers, ec);
            if (ec == boost::asio::error::would_block) ec = {};
            if (ec) return sent;
        }
        hold(buffers, sent);
        return size;
    }
    // A TLS write never needs to read on this server (renegotiation is
    // refused), and a synchronous read would block the thread.
    template <class MutableBuffers>
    std::size_t read_some(const MutableBuffers&, boost::system::error_code& ec) {
        ec = boost::asio::error::would_block;
        return 0;
    }

    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return _stream->async_read_some(buffers, std::forward<Token>(token));
    }
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        assert(_held.empty());
        return _stream->async_write_some(buffers, std::forward<Token>(token));
    }

    bool holds_output() const { return !_held.empty(); }
    boost::asio::const_buffer held() const { return boost::asio::buffer(_held); }
    // The held bytes were sent (or the connection failed).
    void release_held() {
        _held.clear();
        _held.shrink_to_fit();
    }

private:
    template <class ConstBuffers>
    void hold(const ConstBuffers& buffers, std::size_t skip) {
        for (auto it = boost::asio::buffer_sequence_begin(buffers);
             it != boost::asio::buffer_sequence_end(buffers); ++it) {
            const boost::asio::const_buffer b(*it);
            if (skip >= b.size()) {
                skip -= b.size();
                continue;
            }
            _held.append(static_cast<const char*>(b.data()) + skip, b.size() - skip);
            skip = 0;
        }
    }

    connection_stream* _stream;
    std::string _held;
};

}  // namespace dstream::edge
