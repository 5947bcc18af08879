#pragma once
// The HTTP listener: HTTP/1.1, and HTTP/2 (ALPN h2 over TLS, or h2c with
// prior knowledge in clear), over TLS when its options carry credentials:
// accepts connections and runs one coroutine per connection on its own
// strand, on one of the I/O threads (round robin). Keep-alive and pipelined
// requests are served in order; slow or idle clients time out without holding a thread.
// A plain HTTP/1.1 connection whose requests keep going to one stream group
// moves, between two requests, to the I/O thread that runs the group: a
// writer to one stream is then answered without a hand-off between threads.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>

#include "edge/exchange.h"
#include "edge/h2_session.h"
#include "edge/request_head.h"
#include "runtime/io_threads.h"
#include "service/stream_service.h"

namespace spdlog {
class logger;
}

namespace dstream::edge {

struct http_metrics;

class server {
public:
    server(const runtime::io_contexts& io, service::stream_service& service, edge_options options);
    ~server();

    // Binds and listens; throws on failure (start-up errors are exceptions).
    void listen(const std::string& host, std::uint16_t port);
    std::uint16_t port() const;

    // A graceful stop: accepts no more connections, ends live reads, closes
    // connections idle between requests, and closes every other one after the
    // answer in flight. `drained` runs on the io once no connection is left.
    // Any thread, once.
    void drain(std::function<void()> drained);
    // The connections still open and the requests in flight, for the log of
    // a shutdown that ran out of time.
    std::string open_work() const;

private:
    struct connection;

    boost::asio::awaitable<void> accept_loop();
    // The coroutine keeps `conn` alive: a bounded shutdown destroys the
    // server (and _connections) before the io_context destroys the frames
    // of unfinished coroutines, whose messages take their fields from the
    // connection's arena.
    boost::asio::awaitable<void> serve_connection(std::shared_ptr<connection> conn);
    // A connection moved to another I/O thread, from its next request on.
    boost::asio::awaitable<void> serve_moved(std::shared_ptr<connection> conn);
    // Closes the connection's sending side and forgets it.
    void end_connection(connection& conn);
    // After an answer: the io_context the connection should move to, when
    // its requests kept going to a group another I/O thread runs; null
    // when it stays.
    boost::asio::io_context* home_to_move_to(connection& conn) const;
    // Hands the connection to a coroutine on `to`'s thread; false when it
    // stays (the server drains, or the descriptor could not move).
    bool move_connection(connection& conn, boost::asio::io_context& to);
    // HTTP/1.1 on `stream`: the connection's TCP stream, or TLS over it. The
    // one loop for both, compiled for each, so plain HTTP pays nothing for
    // TLS being possible.
    template <class Stream>
    boost::asio::awaitable<void> serve_http1(connection& conn, Stream& stream);
    // Cuts the read of a request head that is not whole by the connection's
    // head deadline (a slow loris's too).
    static void watch_head(connection& conn);
    // Answers one request whose head was read (`head_error` set when it is
    // malformed); false when the connection must close after it.
    template <class Stream>
    boost::asio::awaitable<bool> answer(connection& conn, Stream& stream, request_parser& parser,
                                        const boost::system::error_code& head_error);
    // HTTP/2 on `stream` (edge/h2_session.h): this coroutine reads, a
    // writer and a watchdog run beside it, and each request is answered by
    // a coroutine of its own on the connection's strand.
    struct h2_link;
    template <class Stream>
    boost::asio::awaitable<void> serve_h2(std::shared_ptr<connection> conn, Stream& stream);
    template <class Stream>
    boost::asio::awaitable<void> h2_writer(std::shared_ptr<connection> conn, Stream& stream,
                                           std::shared_ptr<h2_link> link);
    boost::asio::awaitable<void> h2_watchdog(std::shared_ptr<connection> conn,
                                             std::shared_ptr<h2_link> link);
    boost::asio::awaitable<void> answer_h2(std::shared_ptr<connection> conn,
                                           std::shared_ptr<h2_link> link,
                                           std::shared_ptr<h2_stream> stream);
    boost::asio::awaitable<void> answer_h2_stream(connection& conn, h2_stream& stream);
    // A request whose head and body are read, whatever its protocol: its
    // exchange, dispatched by route (the admin listener's routes on it).
    // `resolved` is the caller's, whose frame outlives the exchange; its route
    // is moved into the exchange.
    boost::asio::awaitable<void> run_exchange(transport io, request& head, result<route>& resolved,
                                              const request_target& target, answer_summary& summary,
                                              std::unique_ptr<service::part_upload> part_upload);
    // Metrics, the access log and the error log of one answered request.
    void account(const connection& conn, const answer_summary& s, const request& head,
                 std::uint64_t duration_us);
    void forget(const connection* conn);

    runtime::io_contexts _io;
    std::size_t _accepted = 0;  // on the acceptor's strand
    service::stream_service& _service;
    edge_options _options;
    admission _gate;
    read_quota _quota;
    boost::asio::ip::tcp::acceptor _acceptor;
    http_metrics& _metrics;
    std::shared_ptr<spdlog::logger> _access_log;  // null when the access log is off

    mutable std::mutex _connections_mutex;
    std::unordered_map<const connection*, std::shared_ptr<connection>> _connections;
    std::function<void()> _drained;
    std::atomic<bool> _draining{false};
};

}  // namespace dstream::edge
