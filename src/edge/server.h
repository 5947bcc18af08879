#pragma once
// The HTTP/1.1 listener: accepts connections and runs one coroutine per
// connection on its own strand. Keep-alive and pipelined requests are served
// in order; slow or idle clients time out without holding a thread.
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "edge/exchange.h"
#include "service/stream_service.h"

namespace dstream::edge {

class server {
public:
    server(boost::asio::io_context& io, service::stream_service& service, edge_options options);

    // Binds and listens; throws on failure (start-up errors are exceptions).
    void listen(const std::string& host, std::uint16_t port);
    std::uint16_t port() const;
    void stop();

private:
    boost::asio::awaitable<void> accept_loop();
    // Takes ownership of `socket` (a raw pointer: see runtime/async_slot.h).
    boost::asio::awaitable<void> serve_connection(connection_socket* socket);

    boost::asio::io_context& _io;
    service::stream_service& _service;
    edge_options _options;
    boost::asio::ip::tcp::acceptor _acceptor;
};

}  // namespace dstream::edge
