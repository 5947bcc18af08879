#include "edge/server.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <spdlog/spdlog.h>

#include "edge/dispatch.h"
#include "edge/early_answer.h"
#include "edge/request_head.h"

namespace dstream::edge {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// Answers a request that never reached a route: a parse failure or a body
// over the limit (extensions 10: 413 decided before reading the body).
asio::awaitable<void> send_early_error(connection_stream& stream, const edge_options& options,
                                       protocol::error_code code, std::string_view message) {
    request req;
    req.version(11);
    exchange ex(stream, req, route{}, query_params{}, nullptr, options);
    ex.close_after();
    response res = ex.make_error(make_error(code, std::string(message)));
    if (code == protocol::error_code::request_too_large) {
        res.set("Ursula-Max-Request-Bytes", std::to_string(options.max_request_bytes));
    }
    boost::system::error_code ec;
    res.prepare_payload();
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
}

// Reads the next request head into `parser`. The head is checked as it
// arrives (see edge/request_head.h): errors are Beast's, bad_version for a
// request line that cannot be one, header_limit for a head over the limit.
asio::awaitable<boost::system::error_code> read_request_head(connection_stream& stream,
                                                             beast::flat_buffer& buffer,
                                                             request_parser& parser) {
    boost::system::error_code ec;
    request_head_scan scan;
    while (true) {
        const auto data = buffer.data();
        const auto check = check_request_head(
            std::string_view(static_cast<const char*>(data.data()), data.size()), scan);
        if (check == request_head_check::malformed) co_return http::error::bad_version;
        if (check == request_head_check::too_large) co_return http::error::header_limit;
        if (check == request_head_check::complete) break;
        const std::size_t n = co_await stream.async_read_some(
            buffer.prepare(beast::read_size(buffer, max_request_head_bytes - buffer.size())),
            asio::redirect_error(asio::use_awaitable, ec));
        buffer.commit(n);
        // A peer that stops inside a head sent a partial message, as Beast
        // would report it; one that stops between requests just left.
        if (ec == asio::error::eof && buffer.size() > 0) co_return http::error::partial_message;
        if (ec) co_return ec;
    }
    co_await http::async_read_header(stream, buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
    co_return ec;
}

}  // namespace

server::server(asio::io_context& io, service::stream_service& service, edge_options options)
    : _io(io), _service(service), _options(std::move(options)), _acceptor(io) {}

void server::listen(const std::string& host, std::uint16_t port) {
    const tcp::endpoint endpoint(asio::ip::make_address(host), port);
    _acceptor.open(endpoint.protocol());
    _acceptor.set_option(asio::socket_base::reuse_address(true));
    _acceptor.bind(endpoint);
    _acceptor.listen(asio::socket_base::max_listen_connections);
    asio::co_spawn(_io, accept_loop(), asio::detached);
}

std::uint16_t server::port() const { return _acceptor.local_endpoint().port(); }

void server::stop() {
    boost::system::error_code ec;
    _acceptor.close(ec);
}

asio::awaitable<void> server::accept_loop() {
    // A failed accept is mostly a full descriptor table (a connection flood):
    // retrying at once would spin a core and flood the log until connections
    // close, so the retries back off, 5 ms doubling up to 1 s.
    constexpr auto first_pause = std::chrono::milliseconds(5);
    constexpr auto longest_pause = std::chrono::seconds(1);
    std::chrono::milliseconds pause{0};
    asio::steady_timer timer(_io);
    while (_acceptor.is_open()) {
        boost::system::error_code ec;
        const connection_executor strand = asio::make_strand(_io);
        connection_socket socket =
            co_await _acceptor.async_accept(strand, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec == asio::error::operation_aborted) co_return;
            pause = std::clamp<std::chrono::milliseconds>(2 * pause, first_pause, longest_pause);
            spdlog::warn("accept failed: {}; retrying in {} ms", ec.message(), pause.count());
            timer.expires_after(pause);
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        pause = std::chrono::milliseconds(0);
        socket.set_option(tcp::no_delay(true), ec);
        auto executor = socket.get_executor();
        auto* owned = new connection_socket(std::move(socket));
        asio::co_spawn(executor, serve_connection(owned), asio::detached);
    }
}

asio::awaitable<void> server::serve_connection(connection_socket* socket) {
    connection_stream stream(std::move(*socket));
    delete socket;
    beast::flat_buffer buffer;
    try {
        while (true) {
            request_parser parser;
            prepare_head_parser(parser);
            // The whole head must arrive within the idle timeout: a client
            // sending a byte now and then (slow loris) is cut there too.
            stream.expires_after(_options.idle_timeout);
            boost::system::error_code ec = co_await read_request_head(stream, buffer, parser);
            if (ec == http::error::end_of_stream || ec == asio::error::eof ||
                ec == beast::error::timeout || ec == asio::error::connection_reset) {
                break;
            }
            if (ec) {
                spdlog::debug("unparseable request head: {}", ec.message());
                const std::string why = ec == http::error::header_limit
                                            ? "the request head exceeds " +
                                                  std::to_string(max_request_head_bytes) + " bytes"
                                            : "malformed HTTP request";
                co_await send_early_error(stream, _options, protocol::error_code::invalid_request,
                                          why);
                break;
            }
            const auto& head = parser.get();
            if (const auto length = parser.content_length();
                length && *length > _options.max_request_bytes) {
                co_await send_early_error(stream, _options, protocol::error_code::request_too_large,
                                          "request body exceeds the server's limit");
                break;
            }
            parser.body_limit(_options.max_request_bytes);
            // Only chunked is a transfer coding we read; anything else would
            // leave the body in the stream to be taken for the next request.
            if (head.count(http::field::transfer_encoding) > 0 && !parser.chunked()) {
                co_await send_early_error(stream, _options, protocol::error_code::invalid_request,
                                          "unsupported Transfer-Encoding");
                break;
            }
            std::optional<std::uint64_t> declared;
            if (const auto length = parser.content_length()) declared = *length;
            const auto early =
                co_await answer_before_body(stream, parser.get(), declared, _service, _options);
            if (early == early_answer::close) break;
            if (early == early_answer::body_follows) {
                // Read the body the client is sending, and drop it.
                stream.expires_after(_options.body_timeout);
                co_await http::async_read(stream, buffer, parser,
                                          asio::redirect_error(asio::use_awaitable, ec));
                if (ec || !parser.get().keep_alive()) break;
                continue;
            }
            if (beast::iequals(head[http::field::expect], "100-continue")) {
                http::response<http::empty_body> cont{http::status::continue_, head.version()};
                co_await http::async_write(stream, cont, asio::use_awaitable);
            }
            stream.expires_after(_options.body_timeout);
            co_await http::async_read(stream, buffer, parser,
                                      asio::redirect_error(asio::use_awaitable, ec));
            if (ec == http::error::body_limit) {
                co_await send_early_error(stream, _options, protocol::error_code::request_too_large,
                                          "request body exceeds the server's limit");
                break;
            }
            if (ec) {
                if (ec != beast::error::timeout && ec != asio::error::eof &&
                    ec != http::error::partial_message) {
                    co_await send_early_error(stream, _options,
                                              protocol::error_code::invalid_request,
                                              "malformed HTTP request body");
                }
                break;
            }
            stream.expires_never();
            request req = parser.release();
            const bool keep_alive = req.keep_alive();
            const bool closing = co_await dispatch(stream, req, _service, _options);
            if (!keep_alive || closing) break;
        }
    } catch (const boost::system::system_error& e) {
        // The peer went away mid-answer: nothing more to do for this connection.
        spdlog::debug("connection ended: {}", e.what());
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace dstream::edge
