// A minimal HTTP/1.1 keep-alive client for the load generator: one socket,
// at most one request in flight, callback style (no coroutines), no
// per-request heap allocation in the steady state.
//
// The caller fills head() with the request line and header fields (ending in
// the blank line), then calls send(body). The head and body go out in one
// gather write; the response is parsed by a small Beast basic_parser that
// keeps only the status, keep-alive, the body length, a bounded prefix of
// non-2xx bodies and any header fields asked for. The exchange handler is
// called once per send() with the outcome; latency runs from the start of the
// write to the last byte of the response.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before the Asio headers (GCC 12 + Boost 1.74)
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>

namespace dstream::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using bench_clock = std::chrono::steady_clock;

// Where the load goes: http://HOST:PORT[/PREFIX]. Resolved once.
struct target {
    std::string host;
    std::uint16_t port = 0;
    std::string host_header;  // "HOST:PORT", sent as Host
    std::string base_path;    // path part of the URL without a trailing '/', may be empty
    tcp::endpoint endpoint;
};

// Parses and resolves the URL; on failure returns false and sets error.
bool parse_target(std::string_view url, target& out, std::string& error);

// Request heads are built in place in a kept buffer (no allocation once it
// has grown): start_head, then fields, then end_head.
// "METHOD PATH HTTP/1.1\r\nHost: HOST\r\n"
void start_head(std::string& out, std::string_view method, std::string_view path, const target& t);
// start_head in two steps, for a query in between: "METHOD PATH", then
// " HTTP/1.1\r\nHost: HOST\r\n".
void begin_request_line(std::string& out, std::string_view method, std::string_view path);
void end_request_line(std::string& out, const target& t);
// "NAME: VALUE\r\n"
void add_field(std::string& out, std::string_view name, std::string_view value);
void add_field(std::string& out, std::string_view name, std::uint64_t value);
// The blank line ending the head.
void end_head(std::string& out);
void append_number(std::string& out, std::uint64_t v);
// Percent-encodes everything but RFC 3986 unreserved characters: offsets and
// cursors are opaque and clients must encode them in a query.
void append_query_value(std::string& out, std::string_view value);

// Opens `sock` and connects it to the target with TCP_NODELAY set; then
// done(ec) (at once when the socket cannot be opened).
template <class Done>
void async_open(tcp::socket& sock, const target& t, Done&& done) {
    error_code ec;
    sock.open(t.endpoint.protocol(), ec);
    if (ec) {
        done(ec);
        return;
    }
    sock.async_connect(t.endpoint,
                       [&sock, done = std::forward<Done>(done)](const error_code& cec) mutable {
                           if (!cec) {
                               error_code ignored;
                               sock.set_option(tcp::no_delay(true), ignored);
                           }
                           done(cec);
                       });
}

// Receives the body of a 2xx response piece by piece as it is parsed, so a
// scenario can scan or verify a body without holding it.
class body_sink {
public:
    virtual void on_body(std::string_view piece) = 0;

protected:
    ~body_sink() = default;
};

// Response parser that throws away what the generator does not need; the
// bytes of a 2xx body go to the sink when there is one.
class response_parser final : public http::basic_parser<false> {
public:
    response_parser(std::string& body_capture, std::size_t capture_limit,
                    const std::vector<std::string>& capture_fields,
                    std::vector<std::string>& captured, body_sink* sink = nullptr);

    int status() const { return status_; }
    std::uint64_t body_bytes() const { return body_bytes_; }

private:
    void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                         error_code&) override {}
    void on_response_impl(int code, beast::string_view, int, error_code&) override {
        status_ = code;
    }
    void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                       error_code&) override;
    void on_header_impl(error_code&) override {}
    void on_body_init_impl(boost::optional<std::uint64_t> const&, error_code&) override {}
    std::size_t on_body_impl(beast::string_view body, error_code&) override;
    void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override;
    void on_finish_impl(error_code&) override {}

    void take(beast::string_view body);

    int status_ = 0;
    std::uint64_t body_bytes_ = 0;
    std::string& body_capture_;
    std::size_t capture_limit_;
    const std::vector<std::string>& capture_fields_;
    std::vector<std::string>& captured_;
    body_sink* sink_;
};

struct response {
    error_code ec;   // connect, write, read or parse failure; status is 0 then
    int status = 0;  // HTTP status code
    bool keep_alive = false;
    bench_clock::time_point start;  // write start
    bench_clock::time_point end;    // full response read (or failure)
    std::uint64_t body_bytes = 0;
    std::string_view
        body;  // prefix of a non-2xx body (up to capture_limit), valid until the next send
    const std::vector<std::string>* fields =
        nullptr;  // values of capture_fields, same order ("" if absent)

    bool ok() const { return !ec && status >= 200 && status < 300; }
    std::uint64_t latency_ns() const {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    }
};

// "connection refused", or "404 <start of the body>": for error samples.
std::string describe_failure(const error_code& ec, int status, std::string_view body);
inline std::string describe_failure(const response& r) {
    return describe_failure(r.ec, r.status, r.body);
}

class http_connection;

class exchange_handler {
public:
    virtual void on_response(http_connection& c, const response& r) = 0;

protected:
    ~exchange_handler() = default;
};

class http_connection {
public:
    http_connection(asio::io_context& ioc, const target& t, exchange_handler& handler);
    http_connection(const http_connection&) = delete;
    http_connection& operator=(const http_connection&) = delete;

    // The request head for the next send(): request line, fields, blank line.
    // Cleared by the caller; its capacity is kept between requests.
    std::string& head() { return head_; }

    // Writes head() and body (which must stay valid until the handler runs),
    // opening the connection first when it is closed. Exactly one handler
    // call follows. Must not be called while a request is in flight.
    void send(std::string_view body);

    // Opens the connection without sending; the handler gets a response with
    // status 0 and either an error or no error (connected).
    void connect();

    // Closes the socket; an in-flight request completes with an error.
    void close();

    bool is_open() const { return sock_.is_open(); }
    bool busy() const { return busy_; }
    std::uint64_t connects() const { return connects_; }

    // Bytes of non-2xx response bodies kept for diagnostics.
    std::size_t capture_limit = 512;
    // Response header fields (case-insensitive names) whose values are passed
    // in response::fields.
    std::vector<std::string> capture_fields;
    // Where 2xx response bodies go as they arrive (not kept when set).
    body_sink* sink = nullptr;

    // Opaque slot for the scenario (e.g. the index of its per-connection state).
    std::size_t tag = 0;

private:
    void start_connect(bool then_write);
    void start_write();
    void on_write(const error_code& ec);
    // Feeds the parser what is buffered, reading more until the response is whole.
    void parse_buffered();
    void on_read();
    void finish(const error_code& ec);

    static constexpr std::size_t min_read_bytes = 16 * 1024;
    static constexpr std::size_t max_read_bytes = 1024 * 1024;

    asio::io_context& ioc_;
    const target& target_;
    exchange_handler& handler_;
    tcp::socket sock_;
    beast::flat_buffer buffer_;
    std::size_t read_bytes_ = min_read_bytes;  // the next read's size
    std::string head_;
    std::string_view body_;
    std::optional<response_parser> parser_;
    std::string body_capture_;
    std::vector<std::string> captured_;
    response resp_;
    bool busy_ = false;
    bool connect_only_ = false;
    std::uint64_t connects_ = 0;
};

}  // namespace dstream::bench
