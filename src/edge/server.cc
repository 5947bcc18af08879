#include "edge/server.h"

#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <spdlog/spdlog.h>

#include "edge/connection_stream.h"
#include "edge/dispatch.h"
#include "edge/early_answer.h"
#include "edge/http_metrics.h"
#include "edge/request_head.h"
#include "edge/tls_wire.h"
#include "metrics/stopwatch.h"

namespace dstream::edge {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// Answers a request that never reached a route: a parse failure or a body
// over the limit (extensions 10: 413 decided before reading the body).
asio::awaitable<void> send_early_error(transport stream, const edge_options& options,
                                       answer_summary& summary, protocol::error_code code,
                                       std::string_view message) {
    request req;
    req.version(11);
    exchange ex(stream, req, route{}, query_params{}, nullptr, options, summary);
    ex.close_after();
    response res = ex.make_error(make_error(code, std::string(message)));
    if (code == protocol::error_code::request_too_large) {
        res.set("Ursula-Max-Request-Bytes", std::to_string(options.max_request_bytes));
    }
    co_await ex.send(res);
}

std::string_view text(beast::string_view s) { return {s.data(), s.size()}; }

enum class parser_goal { head, message };

// RFC 9113 3.4: the first bytes of an HTTP/2 client.
constexpr std::string_view h2_preface{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24};

// The size of the next socket read: room the buffer already has, but at
// least a few KiB, so that a request of that size (a head and a small body)
// comes in one read where 512-byte reads took three; at most `limit`.
std::size_t next_read_size(const beast::flat_buffer& buffer, std::size_t limit) {
    constexpr std::size_t min_read_bytes = 4096;
    return std::min(limit, std::max(min_read_bytes, buffer.capacity() - buffer.size()));
}

// Feeds `parser` what is buffered, until it holds the head or the whole
// message (`goal`); need_more when that takes more bytes. Errors are Beast's
// (partial_message, body_limit, ...).
boost::system::error_code feed_parser(beast::flat_buffer& buffer, request_parser& parser,
                                      parser_goal goal) {
    // The head alone first (the early answers look at it before any body
    // byte is taken); a body as far as each put can go.
    if (goal == parser_goal::message) parser.eager(true);
    boost::system::error_code ec;
    while (goal == parser_goal::head ? !parser.is_header_done() : !parser.is_done()) {
        if (buffer.size() == 0) return http::error::need_more;
        buffer.consume(parser.put(buffer.data(), ec));
        if (ec) return ec;
    }
    return ec;
}

// feed_parser(), reading from the socket whenever it needs more. Called only
// when it does: a request whose head and body arrived together takes no
// coroutine and no socket read (Beast's composed reads cost an asynchronous
// operation each, a post and a work guard, even for buffered bytes). Errors
// are feed_parser()'s, end_of_stream, or the socket's.
template <class Stream>
asio::awaitable<boost::system::error_code> read_into_parser(Stream& stream,
                                                            beast::flat_buffer& buffer,
                                                            request_parser& parser,
                                                            parser_goal goal) {
    constexpr std::size_t read_chunk = 64 * 1024;
    boost::system::error_code ec;
    while ((ec = feed_parser(buffer, parser, goal)) == http::error::need_more) {
        // A large body is read in pieces of up to read_chunk.
        const std::size_t want =
            std::max(next_read_size(buffer, read_chunk),
                     static_cast<std::size_t>(std::min<std::uint64_t>(
                         parser.content_length_remaining().value_or(0), read_chunk)));
        const std::size_t n = co_await stream.async_read_some(
            buffer.prepare(want), asio::redirect_error(asio::use_awaitable, ec));
        buffer.commit(n);
        if (ec == asio::error::eof) {
            if (!parser.got_some()) co_return http::error::end_of_stream;
            ec = {};
            parser.put_eof(ec);
            co_return ec;
        }
        if (ec) co_return ec;
    }
    co_return ec;
}

// The outcome of the request head in `buffer`, once there is one: checked as
// it arrives (see edge/request_head.h), then parsed into `parser`. Nothing
// while the head is incomplete. Errors are Beast's, bad_version for a
// request line that cannot be one, header_limit for a head over the limit.
std::optional<boost::system::error_code> take_buffered_head(beast::flat_buffer& buffer,
                                                            request_head_scan& scan,
                                                            request_parser& parser) {
    const auto data = buffer.data();
    switch (check_request_head(std::string_view(static_cast<const char*>(data.data()), data.size()),
                               scan)) {
        case request_head_check::malformed:
            return http::error::bad_version;
        case request_head_check::too_large:
            return http::error::header_limit;
        case request_head_check::complete: {
            // Beast may still want more than the check did: then read on.
            const auto ec = feed_parser(buffer, parser, parser_goal::head);
            if (ec == http::error::need_more) return std::nullopt;
            return ec;
        }
        case request_head_check::incomplete:
            break;
    }
    return std::nullopt;
}

}  // namespace

// Touched only on its strand, except the pointer kept in _connections.
struct server::connection : std::enable_shared_from_this<connection> {
    explicit connection(connection_socket socket)
        : stream(std::move(socket)), head_watch(stream.get_executor()) {}

    connection_stream stream;
    // On a TLS listener: the context of its handshake (a reload leaves it
    // to the connections that began with it) and TLS over `stream`.
    std::shared_ptr<boost::asio::ssl::context> tls_context;
    std::unique_ptr<tls_stream> tls;
    wire_protocol protocol = wire_protocol::http1;
    beast::flat_buffer buffer;
    field_arena fields;        // of its requests and answers
    std::string remote;        // "address:port", for the logs
    answer_summary summary;    // of the request being answered
    bool busy = false;         // from a request's head to the end of its answer
    h2_session* h2 = nullptr;  // while the connection speaks HTTP/2
    // While an HTTP/1.1 request head is awaited: by when it must have
    // arrived (the first one's runs from the connection's start, the wait
    // for the h2c preface being part of it); the latest time otherwise.
    std::chrono::steady_clock::time_point head_deadline =
        std::chrono::steady_clock::time_point::max();
    // Ends the wait for a head past its deadline (server::watch_head).
    asio::basic_waitable_timer<std::chrono::steady_clock,
                               asio::wait_traits<std::chrono::steady_clock>, connection_executor>
        head_watch;
    bool head_watched = false;
    bool head_timed_out = false;
    // How the h2c check's read ended, for the HTTP/1.1 loop to see.
    boost::system::error_code read_error;
    // The io_context of the I/O thread it runs on, and the stream group of
    // the request being answered, when it names a stream, the connection is
    // plain HTTP/1.1 and the node has more than one I/O thread.
    asio::io_context* home = nullptr;
    std::optional<std::uint32_t> request_group;
    // How many requests in a row went to `streak_group`.
    std::uint32_t streak_group = 0;
    unsigned streak = 0;
    // Handed to a coroutine on another thread (server::move_connection):
    // this one ends without closing the connection.
    bool moved = false;
};

namespace {

// Requests in a row to one group on another thread before the connection
// moves to that thread. A writer to one stream moves after its fourth; a
// connection that takes many streams in turn (a load generator, a fan-in
// proxy) meets one group four times running too seldom for the moves to
// cost it anything: with 16 groups, once in 4096 requests.
constexpr unsigned requests_before_move = 4;

}  // namespace

// What the reader, the writer, the watchdog and the request coroutines of
// one HTTP/2 connection share, on its strand.
struct server::h2_link {
    explicit h2_link(const connection_executor& ex) : wake(ex), tick(ex), done(ex) {}

    // Stops everything: the socket's operations are cancelled and every
    // stream is told the connection is gone.
    void end(connection& conn) {
        if (ended) return;
        ended = true;
        wake.cancel();
        tick.cancel();
        conn.stream.cancel();
        session->close();
    }
    // One of the coroutines that serve_h2 waits for is done.
    void finished() {
        --running;
        done.cancel();
    }

    std::shared_ptr<h2_session> session;
    asio::steady_timer wake;  // the writer waits for output on it
    asio::steady_timer tick;  // the watchdog's
    asio::steady_timer done;  // serve_h2 waits for the others on it
    std::chrono::steady_clock::time_point write_since{};
    std::chrono::steady_clock::time_point last_request = std::chrono::steady_clock::now();
    bool writing = false;
    bool ended = false;
    int running = 0;   // the writer, the watchdog and the request coroutines
    int handlers = 0;  // the request coroutines
};

server::server(const runtime::io_contexts& io, service::stream_service& service,
               edge_options options)
    : _io(io),
      _service(service),
      _options(std::move(options)),
      _gate(_options.limits),
      _quota(_options.client_read_bytes_per_second),
      _acceptor(asio::make_strand(io.first())),
      _metrics(http_metrics::get()) {
    _options.gate = &_gate;
    _options.quota = &_quota;
    if (_options.access_log) {
        // A logger of its own, so that --log-level does not silence it; it
        // writes where the node's log goes.
        const auto& sinks = spdlog::default_logger()->sinks();
        _access_log = std::make_shared<spdlog::logger>("access", sinks.begin(), sinks.end());
        _access_log->set_level(spdlog::level::info);
    }
}

server::~server() = default;

void server::listen(const std::string& host, std::uint16_t port) {
    const tcp::endpoint endpoint(asio::ip::make_address(host), port);
    _acceptor.open(endpoint.protocol());
    _acceptor.set_option(asio::socket_base::reuse_address(true));
    _acceptor.bind(endpoint);
    _acceptor.listen(asio::socket_base::max_listen_connections);
    asio::co_spawn(_acceptor.get_executor(), accept_loop(), asio::detached);
}

std::uint16_t server::port() const { return _acceptor.local_endpoint().port(); }

void server::drain(std::function<void()> drained) {
    asio::post(_acceptor.get_executor(), [this] {
        boost::system::error_code ignored;
        _acceptor.close(ignored);
    });
    std::function<void()> already;
    {
        std::lock_guard lock(_connections_mutex);
        _draining = true;
        for (const auto& [_, conn] : _connections) {
            asio::post(conn->stream.get_executor(), [conn = conn] {
                if (conn->h2 != nullptr) {
                    conn->h2->drain();  // GOAWAY; its streams finish
                } else if (conn->busy) {
                    conn->summary.close = true;
                } else {
                    conn->stream.cancel();  // idle between requests
                }
            });
        }
        if (_connections.empty()) {
            already = std::move(drained);
        } else {
            _drained = std::move(drained);
        }
    }
    // After the posts above: a woken reader reaches its strand behind them,
    // so its answer already says the connection closes.
    _service.end_live_reads();
    if (already) asio::post(_io.first(), std::move(already));
}

std::string server::open_work() const {
    std::size_t open = 0;
    {
        std::lock_guard lock(_connections_mutex);
        open = _connections.size();
    }
    std::string in_flight;
    for (std::size_t i = 0; i < request_kind_count; ++i) {
        if (const auto n = _metrics.kinds[i].in_flight.value(); n > 0) {
            in_flight += fmt::format(" {}={}", name(static_cast<request_kind>(i)), n);
        }
    }
    return fmt::format("connections={} in_flight:{}", open,
                       in_flight.empty() ? " none" : in_flight);
}

void server::forget(const connection* conn) {
    _metrics.connections.add(-1);
    std::function<void()> drained;
    {
        std::lock_guard lock(_connections_mutex);
        _connections.erase(conn);
        if (_draining && _connections.empty()) drained = std::exchange(_drained, nullptr);
    }
    if (drained) asio::post(_io.first(), std::move(drained));
}

asio::awaitable<void> server::accept_loop() {
    // A failed accept is mostly a full descriptor table (a connection flood):
    // retrying at once would spin a core and flood the log until connections
    // close, so the retries back off, 5 ms doubling up to 1 s.
    constexpr auto first_pause = std::chrono::milliseconds(5);
    constexpr auto longest_pause = std::chrono::seconds(1);
    std::chrono::milliseconds pause{0};
    asio::steady_timer timer(_io.first());
    while (_acceptor.is_open()) {
        boost::system::error_code ec;
        asio::io_context& home = _io.of(_accepted++);
        const connection_executor strand(home);
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
        auto conn = std::make_shared<connection>(std::move(socket));
        conn->home = &home;
        {
            std::lock_guard lock(_connections_mutex);
            _connections.emplace(conn.get(), conn);
        }
        _metrics.connections.add(1);
        asio::co_spawn(conn->stream.get_executor(), serve_connection(conn), asio::detached);
    }
}

// The reads and the accounting of each request are written out here, not
// in coroutines of their own: this frame lives as long as the connection,
// where each nested coroutine would be a frame allocated per request.
asio::awaitable<void> server::serve_connection(std::shared_ptr<connection> conn) {
    boost::system::error_code ec;
    const auto remote = conn->stream.socket().remote_endpoint(ec);
    if (!ec) conn->remote = remote.address().to_string() + ":" + std::to_string(remote.port());
    if (_options.tls) {
        conn->tls_context = _options.tls->current();
        conn->tls = std::make_unique<tls_stream>(conn->stream, *conn->tls_context);
        // The handshake counts as the wait for the first request head.
        conn->stream.expires_after(_options.idle_timeout);
        co_await conn->tls->async_handshake(asio::ssl::stream_base::server,
                                            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            _metrics.tls_handshake_failures.inc();
            spdlog::debug("tls handshake failed: remote={} {}", conn->remote, ec.message());
        } else {
            _metrics.tls_handshakes.inc();
            const bool h2 = negotiated_protocol(conn->tls->native_handle()) == "h2";
            conn->protocol = h2 ? wire_protocol::h2_tls : wire_protocol::http1_tls;
            _metrics.connections_of(conn->protocol).add(1);
            if (h2) {
                co_await serve_h2(conn, *conn->tls);
            } else {
                co_await serve_http1(*conn, *conn->tls);
            }
            _metrics.connections_of(conn->protocol).add(-1);
        }
    } else {
        // h2c: a client with prior knowledge opens with the HTTP/2 preface
        // (RFC 9113 3.3); anything else is HTTP/1.x, whose first bytes stay
        // in the buffer for its parser. The client listener only.
        bool h2c = false;
        if (_options.admin == nullptr) {
            conn->stream.expires_after(_options.idle_timeout);
            conn->head_deadline = std::chrono::steady_clock::now() + _options.idle_timeout;
            beast::flat_buffer& buffer = conn->buffer;
            while (true) {
                const std::string_view got(static_cast<const char*>(buffer.data().data()),
                                           buffer.size());
                const std::size_t n = std::min(got.size(), h2_preface.size());
                if (got.substr(0, n) != h2_preface.substr(0, n)) break;
                if (n == h2_preface.size()) {
                    h2c = true;
                    break;
                }
                const std::size_t r = co_await conn->stream.async_read_some(
                    buffer.prepare(next_read_size(buffer, max_request_head_bytes)),
                    asio::redirect_error(asio::use_awaitable, ec));
                buffer.commit(r);
                if (ec) {
                    // Not read again: a socket at its end may not report it twice.
                    conn->read_error = ec;
                    break;
                }
            }
        }
        conn->protocol = h2c ? wire_protocol::h2c : wire_protocol::http1;
        _metrics.connections_of(conn->protocol).add(1);
        if (h2c) {
            co_await serve_h2(conn, conn->stream);
        } else {
            co_await serve_http1(*conn, conn->stream);
            if (conn->moved) co_return;  // its new coroutine ends it
        }
        _metrics.connections_of(conn->protocol).add(-1);
    }
    end_connection(*conn);
}

asio::awaitable<void> server::serve_moved(std::shared_ptr<connection> conn) {
    co_await serve_http1(*conn, conn->stream);
    if (conn->moved) co_return;
    _metrics.connections_of(conn->protocol).add(-1);
    end_connection(*conn);
}

void server::end_connection(connection& conn) {
    boost::system::error_code ignored;
    conn.stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    forget(&conn);
}

asio::io_context* server::home_to_move_to(connection& conn) const {
    if (!conn.request_group) return nullptr;
    const std::uint32_t group = *conn.request_group;
    conn.streak = conn.streak > 0 && conn.streak_group == group ? conn.streak + 1 : 1;
    conn.streak_group = group;
    // The engine runs group i on io_contexts::of(i).
    asio::io_context& to = _io.of(group);
    if (conn.streak < requests_before_move || &to == conn.home) return nullptr;
    return &to;
}

bool server::move_connection(connection& conn, asio::io_context& to) {
    std::shared_ptr<connection> moved;
    {
        // Under the lock drain() takes: a drain either finds the connection
        // moved, or is seen here and keeps it where it is.
        std::lock_guard lock(_connections_mutex);
        if (_draining) return false;
        boost::system::error_code ec;
        const tcp::endpoint local = conn.stream.socket().local_endpoint(ec);
        if (ec) return false;
        // Released between requests, with no operation pending on it; its
        // descriptor goes to a socket of the other thread's reactor as it is.
        const int fd = conn.stream.socket().release(ec);
        if (ec) return false;
        connection_socket socket(connection_executor{to});
        socket.assign(local.protocol(), fd, ec);
        if (ec) {
            // The connection is lost: its next read here fails and ends it.
            spdlog::warn("connection {} not moved to its group's I/O thread: {}", conn.remote,
                         ec.message());
            ::close(fd);
            return false;
        }
        moved = std::make_shared<connection>(std::move(socket));
        moved->home = &to;
        moved->protocol = conn.protocol;
        moved->remote = std::move(conn.remote);
        // Pipelined requests read with the last one.
        moved->buffer.commit(
            asio::buffer_copy(moved->buffer.prepare(conn.buffer.size()), conn.buffer.data()));
        _connections.erase(&conn);
        _connections.emplace(moved.get(), moved);
        conn.moved = true;
    }
    _metrics.connections_moved.inc();
    asio::co_spawn(moved->stream.get_executor(), serve_moved(moved), asio::detached);
    return true;
}

template <class Stream>
asio::awaitable<void> server::serve_http1(connection& c, Stream& stream) {
    connection* const conn = &c;
    boost::system::error_code ec;
    beast::flat_buffer& buffer = conn->buffer;
    // Heads are awaited under the connection's own watch; what the TLS
    // handshake or the h2c check set goes.
    conn->stream.expires_never();
    while (!_draining) {
        request_parser parser(std::piecewise_construct, std::make_tuple(),
                              std::make_tuple(field_allocator<char>(&conn->fields)));
        prepare_head_parser(parser);
        // The whole head must arrive within the idle timeout: a client
        // sending a byte now and then (slow loris) is cut there too.
        if (conn->head_deadline == std::chrono::steady_clock::time_point::max()) {
            conn->head_deadline = std::chrono::steady_clock::now() + _options.idle_timeout;
        }
        watch_head(*conn);
        request_head_scan scan;
        std::optional<boost::system::error_code> head = take_buffered_head(buffer, scan, parser);
        while (!head) {
            std::size_t n = 0;
            if (conn->read_error) {
                ec = std::exchange(conn->read_error, {});  // the h2c check's read ended so
            } else {
                n = co_await stream.async_read_some(
                    buffer.prepare(next_read_size(buffer, max_request_head_bytes - buffer.size())),
                    asio::redirect_error(asio::use_awaitable, ec));
            }
            buffer.commit(n);
            if (!ec) {
                head = take_buffered_head(buffer, scan, parser);
            } else if (ec == asio::error::eof && buffer.size() > 0) {
                // A peer that stops inside a head sent a partial message, as
                // Beast would report it; one that stops between requests
                // just left.
                head = http::error::partial_message;
            } else {
                head = conn->head_timed_out ? beast::error::timeout : ec;
            }
        }
        conn->head_deadline = std::chrono::steady_clock::time_point::max();
        ec = *head;
        // A drain cancels the read of an idle connection.
        if (ec == http::error::end_of_stream || ec == asio::error::eof ||
            ec == beast::error::timeout || ec == asio::error::connection_reset ||
            (ec && _draining)) {
            break;
        }
        conn->busy = true;
        conn->summary = answer_summary{};
        conn->summary.close = _draining;
        const metrics::stopwatch took;
        bool keep_open = false;
        try {
            keep_open = co_await answer(*conn, stream, parser, ec);
        } catch (const boost::system::system_error& e) {
            // The peer went away mid-answer: nothing more to do for this connection.
            spdlog::debug("connection ended: {}", e.what());
        }
        account(*conn, conn->summary, parser.get(), took.elapsed_us());
        conn->busy = false;
        if (!keep_open || conn->summary.close) break;
        if constexpr (std::is_same_v<Stream, connection_stream>) {
            // Between requests: its next ones are read and handed to their
            // group on the same thread, with no hand-off either way.
            if (auto* to = home_to_move_to(*conn); to != nullptr && move_connection(*conn, *to)) {
                break;
            }
        }
    }
    conn->head_watch.cancel();
}

void server::watch_head(connection& conn) {
    // One wait per connection, not one per read: Beast's deadline on the
    // stream arms a timer for every read and cancels it when the read is
    // done. The wait runs out at the deadline it was set for; a deadline
    // moved on since (later heads) sets it again, and one that passed ends
    // the read. While a request is answered nothing is watched, and the
    // next head's wait sets it again.
    if (std::exchange(conn.head_watched, true)) return;
    conn.head_watch.expires_at(conn.head_deadline);
    conn.head_watch.async_wait(
        [self = conn.shared_from_this()](boost::system::error_code ec) {
            connection& c = *self;
            c.head_watched = false;
            if (ec || c.head_deadline == std::chrono::steady_clock::time_point::max()) return;
            if (std::chrono::steady_clock::now() < c.head_deadline) {
                watch_head(c);
                return;
            }
            c.head_timed_out = true;
            c.stream.cancel();
        });
}

template <class Stream>
asio::awaitable<bool> server::answer(connection& conn, Stream& socket, request_parser& parser,
                                     const boost::system::error_code& head_error) {
    // What the exchanges write to; the connection's reads and its 100
    // Continue go to `socket` itself.
    transport stream(conn.stream);
    if constexpr (std::is_same_v<Stream, tls_stream>) stream = transport(conn.stream, &socket);
    answer_summary& summary = conn.summary;
    if (head_error) {
        spdlog::debug("unparseable request head: {}", head_error.message());
        const std::string why =
            head_error == http::error::header_limit
                ? "the request head exceeds " + std::to_string(max_request_head_bytes) + " bytes"
                : "malformed HTTP request";
        co_await send_early_error(stream, _options, summary, protocol::error_code::invalid_request,
                                  why);
        co_return false;
    }
    const auto& head = parser.get();
    if (const auto length = parser.content_length();
        length && *length > _options.max_request_bytes) {
        co_await send_early_error(stream, _options, summary,
                                  protocol::error_code::request_too_large,
                                  "request body exceeds the server's limit");
        co_return false;
    }
    parser.body_limit(_options.max_request_bytes);
    // Only chunked is a transfer coding we read; anything else would
    // leave the body in the stream to be taken for the next request.
    if (head.count(http::field::transfer_encoding) > 0 && !parser.chunked()) {
        co_await send_early_error(stream, _options, summary, protocol::error_code::invalid_request,
                                  "unsupported Transfer-Encoding");
        co_return false;
    }
    std::optional<std::uint64_t> declared;
    if (const auto length = parser.content_length()) declared = *length;
    boost::system::error_code ec;
    std::unique_ptr<service::part_upload> part_upload;
    // Views into the request, which outlives the answer.
    const request_target target =
        split_request_target(std::string_view(head.target().data(), head.target().size()));
    result<route> resolved = resolve_route(target.path);
    // Not a co_await inside a conditional expression: GCC 12 mishandles
    // temporaries there.
    early_answer early = early_answer::none;
    const bool admin = _options.admin != nullptr;  // the admin listener answers after the body
    conn.request_group.reset();
    if constexpr (std::is_same_v<Stream, connection_stream>) {
        // Only a plain connection moves (serve_http1): no lookup for the others.
        if (_io.size() > 1 && !admin && resolved && !resolved->key.empty()) {
            conn.request_group = _service.place(resolved->key).group;
        }
    }
    if (!admin && resolved && routes_before_body(head, *resolved, _options)) {
        early = co_await route_before_body(stream, parser.get(), *resolved, _service, _options,
                                           summary);
    }
    // A request with a query goes the whole way: its query may refuse it
    // (the earlier query form, a malformed one), and no early answer may
    // come before that refusal.
    if (!admin && early == early_answer::none && resolved && !target.has_query &&
        may_answer_before_body(head, declared, *resolved)) {
        early = co_await answer_before_body(stream, parser.get(), *resolved, _service, _options,
                                            summary, part_upload, declared);
    }
    if (early == early_answer::close) co_return false;
    if (early == early_answer::body_follows) {
        // Read the body the client is sending, and drop it.
        conn.stream.expires_after(_options.body_timeout);
        ec = co_await read_into_parser(socket, conn.buffer, parser, parser_goal::message);
        conn.stream.expires_never();
        co_return !ec && parser.get().keep_alive();
    }
    // The body's memory is held until the answer is sent: a body without
    // Content-Length counts as the largest one allowed.
    const std::uint64_t body_bytes =
        parser.chunked() ? _options.max_request_bytes : declared.value_or(0);
    const std::optional<admission::ticket> body_share = _gate.admit_body(body_bytes);
    if (!body_share) {
        co_await send_early_error(stream, _options, summary,
                                  protocol::error_code::ingress_body_bytes_limit_reached,
                                  "the server holds too many request bodies; retry later");
        co_return false;
    }
    if (beast::iequals(head[http::field::expect], "100-continue")) {
        http::response<http::empty_body> cont{http::status::continue_, head.version()};
        co_await http::async_write(socket, cont, asio::use_awaitable);
    }
    // A body already read needs no deadline (Beast's arms a timer per read).
    ec = feed_parser(conn.buffer, parser, parser_goal::message);
    if (ec == http::error::need_more) {
        conn.stream.expires_after(_options.body_timeout);
        ec = co_await read_into_parser(socket, conn.buffer, parser, parser_goal::message);
        conn.stream.expires_never();
    }
    if (ec == http::error::body_limit) {
        co_await send_early_error(stream, _options, summary,
                                  protocol::error_code::request_too_large,
                                  "request body exceeds the server's limit");
        co_return false;
    }
    if (ec) {
        if (ec != beast::error::timeout && ec != asio::error::eof &&
            ec != http::error::partial_message) {
            co_await send_early_error(stream, _options, summary,
                                      protocol::error_code::invalid_request,
                                      "malformed HTTP request body");
        }
        co_return false;
    }
    // The parser keeps the request: its method and target are still there
    // for the access log after a handler moved the body away.
    request& req = parser.get();
    const bool keep_alive = req.keep_alive();
    // An answer may take long (a live read): with nothing more buffered, the
    // read buffer's memory goes meanwhile, and the next read takes it again.
    if (conn.buffer.size() == 0) conn.buffer.shrink_to_fit();
    co_await run_exchange(stream, req, resolved, target, summary, std::move(part_upload));
    co_return keep_alive;
}

asio::awaitable<void> server::run_exchange(transport io, request& head, result<route>& resolved,
                                           const request_target& target, answer_summary& summary,
                                           std::unique_ptr<service::part_upload> part_upload) {
    result<query_params> query = query_params::parse(target.query);
    summary.kind = kind_of(head, resolved, query);
    const metrics::gauge_hold in_flight(http_metrics::get().of(summary.kind).in_flight);
    exchange ex(io, head, resolved ? std::move(*resolved) : route{},
                query ? std::move(*query) : query_params{}, &_service, _options, summary);
    ex.hold_part_upload(std::move(part_upload));
    if (_options.admin != nullptr) {
        co_await dispatch_admin(ex);
    } else {
        co_await dispatch(ex, resolved, query);
    }
}

void server::account(const connection& conn, const answer_summary& s, const request& head,
                     std::uint64_t duration_us) {
    _metrics.record(s.kind, s.status, duration_us);
    _metrics.requests_of(conn.protocol).inc();
    // A 503 is a typed answer a client retries (no leader yet, backpressure),
    // counted in the metrics: in a failover the log would hold little else.
    if (s.status >= 500 && s.status != 503) {
        spdlog::error("request failed: method={} target={} status={} route={} remote={}",
                      text(head.method_string()), text(head.target()), s.status, name(s.kind),
                      conn.remote);
    }
    if (_access_log) {
        _access_log->info(
            "method={} target={} status={} bytes={} duration_us={} remote={} protocol={}{}",
            text(head.method_string()), text(head.target()), s.status, s.body_bytes, duration_us,
            conn.remote,
            conn.protocol == wire_protocol::h2c || conn.protocol == wire_protocol::h2_tls ? "HTTP/2"
            : head.version() == 10 ? "HTTP/1.0"
                                   : "HTTP/1.1",
            conn.tls ? " tls=yes" : " tls=no");
    }
}

template <class Stream>
asio::awaitable<void> server::serve_h2(std::shared_ptr<connection> conn, Stream& stream) {
    // The connection's deadlines are the watchdog's and the streams' own.
    conn->stream.expires_never();
    // The reader's TLS engine may write beside the writer (edge/tls_wire.h).
    if constexpr (std::is_same_v<Stream, tls_stream>) stream.next_layer().queue_writes();
    h2_limits limits;
    limits.max_header_list_bytes = max_request_head_bytes;
    limits.max_body_bytes = _options.max_request_bytes;
    limits.body_timeout = _options.body_timeout;
    const connection_executor executor = conn->stream.get_executor();
    auto link = std::make_shared<h2_link>(executor);
    const std::weak_ptr<h2_link> weak = link;
    link->session = std::make_shared<h2_session>(
        executor, limits, [this, conn, weak](std::shared_ptr<h2_stream> st) {
            const std::shared_ptr<h2_link> l = weak.lock();
            if (!l || l->ended) return;
            ++l->running;
            ++l->handlers;
            asio::co_spawn(conn->stream.get_executor(), answer_h2(conn, l, std::move(st)),
                           asio::detached);
        });
    link->session->set_wake_writer([raw = link.get()] { raw->wake.cancel(); });
    conn->h2 = link->session.get();
    if (_draining) link->session->drain();
    link->running += 2;
    asio::co_spawn(executor, h2_writer(conn, stream, link), asio::detached);
    asio::co_spawn(executor, h2_watchdog(conn, link), asio::detached);

    h2_session& session = *link->session;
    beast::flat_buffer& buffer = conn->buffer;
    boost::system::error_code ec;
    // Bytes read before HTTP/2 was chosen: the h2c preface, and what followed.
    bool ok = true;
    if (buffer.size() > 0) {
        ok = session.receive(static_cast<const std::uint8_t*>(buffer.data().data()), buffer.size());
        buffer.consume(buffer.size());
        session.wake_writer();
    }
    while (ok && !link->ended) {
        constexpr std::size_t read_chunk = 16 * 1024;
        const std::size_t n = co_await stream.async_read_some(
            buffer.prepare(read_chunk), asio::redirect_error(asio::use_awaitable, ec));
        buffer.commit(n);
        if (ec) break;
        ok = session.receive(static_cast<const std::uint8_t*>(buffer.data().data()), buffer.size());
        buffer.consume(buffer.size());
        session.wake_writer();
    }
    buffer.shrink_to_fit();
    if (ok || link->ended) {
        link->end(*conn);  // the client left, or the connection was ended
    } else {
        // Refused: the writer sends the GOAWAY, then ends the connection.
        spdlog::debug("http/2 connection refused: remote={} reason={}", conn->remote,
                      name(session.refusal()));
    }
    while (link->running > 0) {
        link->done.expires_at(asio::steady_timer::time_point::max());
        co_await link->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    conn->h2 = nullptr;
}

template <class Stream>
asio::awaitable<void> server::h2_writer(std::shared_ptr<connection> conn, Stream& stream,
                                        std::shared_ptr<h2_link> link) {
    // Frames go out in writes of up to this much.
    constexpr std::size_t write_chunk = 64 * 1024;
    std::string out;
    boost::system::error_code ec;
    while (!link->ended) {
        out.clear();
        link->session->take_output(out, write_chunk);
        if (out.empty()) {
            if (!link->session->wants_io()) break;  // GOAWAY exchanged, nothing open
            link->wake.expires_at(asio::steady_timer::time_point::max());
            co_await link->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        link->writing = true;
        link->write_since = std::chrono::steady_clock::now();
        if constexpr (std::is_same_v<Stream, tls_stream>) {
            // Encrypted and sent at once, as an HTTP/1.1 answer is
            // (edge/exchange.cc); what the socket does not take is held by
            // the wire, sent before the next frames.
            const std::size_t now = asio::write(stream, asio::buffer(out), ec);
            if (ec == asio::error::would_block) {
                ec = {};
                co_await asio::async_write(stream, asio::buffer(out) + now,
                                           asio::redirect_error(asio::use_awaitable, ec));
            }
            if (!ec && stream.next_layer().holds_output()) {
                co_await stream.next_layer().async_flush(
                    asio::redirect_error(asio::use_awaitable, ec));
            }
        } else {
            // Sent at once too; only what the socket does not take waits.
            const std::size_t now = write_without_waiting(stream.socket(), asio::buffer(out), ec);
            if (!ec && now < out.size()) {
                co_await asio::async_write(stream, asio::buffer(out) + now,
                                           asio::redirect_error(asio::use_awaitable, ec));
            }
        }
        link->writing = false;
        if (ec) break;
    }
    link->end(*conn);
    link->finished();
}

asio::awaitable<void> server::h2_watchdog(std::shared_ptr<connection> conn,
                                          std::shared_ptr<h2_link> link) {
    boost::system::error_code ec;
    while (!link->ended) {
        link->tick.expires_after(std::chrono::seconds(1));
        co_await link->tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (link->ended) break;
        const auto now = std::chrono::steady_clock::now();
        // A client that takes no bytes at all (its TCP window closed): the
        // streams' own waits cannot end it, their bytes are not sent.
        if (link->writing && now - link->write_since > _options.body_timeout) {
            link->session->refuse(h2_refusal::stall);
            link->end(*conn);
            break;
        }
        // Idle: no request for the idle timeout. GOAWAY, and the connection
        // ends once the client has it (or after the idle timeout again).
        if (link->handlers == 0 && now - link->last_request > _options.idle_timeout) {
            if (!link->session->draining()) {
                link->session->drain();
            } else if (now - link->last_request > 2 * _options.idle_timeout) {
                link->end(*conn);
                break;
            }
        }
    }
    link->finished();
}

asio::awaitable<void> server::answer_h2(std::shared_ptr<connection> conn,
                                        std::shared_ptr<h2_link> link,
                                        std::shared_ptr<h2_stream> st) {
    const metrics::stopwatch took;
    try {
        co_await answer_h2_stream(*conn, *st);
    } catch (const boost::system::system_error& e) {
        // The stream or the connection went away mid-answer.
        spdlog::debug("http/2 stream ended: {}", e.what());
        st->reset();
    }
    account(*conn, st->summary(), st->req(), took.elapsed_us());
    --link->handlers;
    link->last_request = std::chrono::steady_clock::now();
    link->finished();
}

// answer() for an HTTP/2 stream: the same early answers, limits and route
// table; the body is the stream's DATA, read by the session as it comes.
asio::awaitable<void> server::answer_h2_stream(connection& conn, h2_stream& st) {
    const transport io(conn.stream, &st);
    answer_summary& summary = st.summary();
    if (st.head_refused()) {
        st.drop_body();
        co_await send_early_error(
            io, _options, summary, protocol::error_code::invalid_request,
            "the request head exceeds " + std::to_string(max_request_head_bytes) + " bytes");
        co_return;
    }
    request& head = st.req();
    std::optional<std::uint64_t> declared;
    if (st.has_declared_length()) declared = st.declared_length();
    if (declared && *declared > _options.max_request_bytes) {
        st.drop_body();
        co_await send_early_error(io, _options, summary, protocol::error_code::request_too_large,
                                  "request body exceeds the server's limit");
        co_return;
    }
    const request_target target =
        split_request_target(std::string_view(head.target().data(), head.target().size()));
    result<route> resolved = resolve_route(target.path);
    std::unique_ptr<service::part_upload> part_upload;
    early_answer early = early_answer::none;
    const bool admin = _options.admin != nullptr;
    if (!admin && resolved && routes_before_body(head, *resolved, _options)) {
        early = co_await route_before_body(io, head, *resolved, _service, _options, summary);
    }
    if (!admin && early == early_answer::none && resolved && !target.has_query &&
        may_answer_before_body(head, declared, *resolved)) {
        early = co_await answer_before_body(io, head, *resolved, _service, _options, summary,
                                            part_upload, declared);
    }
    if (early != early_answer::none) {
        // Answered from the head (extensions 5.5, 5.7): the body is not read.
        st.drop_body();
        co_return;
    }
    // The body's memory is held until the answer is sent; one still coming
    // counts as its declared length, or as the largest allowed.
    const std::uint64_t body_bytes =
        st.body_complete() ? head.body().size() : declared.value_or(_options.max_request_bytes);
    const std::optional<admission::ticket> body_share = _gate.admit_body(body_bytes);
    if (!body_share) {
        st.drop_body();
        co_await send_early_error(io, _options, summary,
                                  protocol::error_code::ingress_body_bytes_limit_reached,
                                  "the server holds too many request bodies; retry later");
        co_return;
    }
    switch (co_await st.wait_body()) {
        case h2_stream::body_state::complete:
            break;
        case h2_stream::body_state::too_large:
            st.drop_body();
            co_await send_early_error(io, _options, summary,
                                      protocol::error_code::request_too_large,
                                      "request body exceeds the server's limit");
            co_return;
        case h2_stream::body_state::open:
        case h2_stream::body_state::gone:
            co_return;  // reset, or the body took longer than the body timeout
    }
    co_await run_exchange(io, head, resolved, target, summary, std::move(part_upload));
}

}  // namespace dstream::edge
