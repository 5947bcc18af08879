#pragma once
// HTTP/2 (RFC 9113) on one connection, framed by libnghttp2; the socket is
// the caller's (edge/server.cc reads into receive() and writes what
// take_output() gives, on the connection's strand). Each request is an
// h2_stream: its head and body as they arrive, and the answer an exchange
// writes to it, so the route table and handlers serve HTTP/2 as they serve
// HTTP/1.1 (edge/connection_stream.h `transport`).
//
// Bounds: the settings of RFC 9113 6.5.2 (concurrent streams, header list
// size, HPACK table size) and flow control both ways: a request body is
// limited as on HTTP/1.1, and an answer waits for its stream's window (a slow
// reader's stream waits while the others flow), at most `body_timeout` with
// no progress. Floods close the connection with a GOAWAY and are counted
// (RFC 9113 10.5): streams reset in bulk (rapid reset, CVE-2023-44487),
// CONTINUATION without end (CVE-2024-27316 and kin), SETTINGS and PING
// floods, acknowledgements the client does not read, and answers stalled on a
// window that never opens.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>

#include "edge/connection_stream.h"
#include "edge/exchange.h"
#include "edge/http_metrics.h"
#include "edge/message.h"

struct nghttp2_session;

namespace dstream::edge {

struct h2_limits {
    std::uint32_t max_concurrent_streams = 100;
    std::uint32_t max_header_list_bytes = 64 * 1024;
    std::uint32_t header_table_bytes = 4096;
    // Our receive windows: how much of request bodies a client may send
    // ahead of what we took.
    std::int32_t stream_window = 256 * 1024;
    std::int32_t connection_window = 1024 * 1024;
    std::uint64_t max_body_bytes = 32 * 1024 * 1024;
    // A request's whole body, and an answer's wait for window, at most.
    std::chrono::seconds body_timeout{30};
    // Answer bytes a stream queues ahead of its window.
    std::size_t stream_send_buffer = 64 * 1024;
};

class h2_session;

// One request and its answer.
class h2_stream : public std::enable_shared_from_this<h2_stream> {
public:
    h2_stream(h2_session& session, std::int32_t id, connection_executor executor);

    std::int32_t id() const { return _id; }
    request& req() { return _req; }
    // The head was over max_header_list_bytes or malformed: answer 400.
    bool head_refused() const { return _head_refused; }
    std::uint64_t declared_length() const { return _declared; }
    bool has_declared_length() const { return _has_declared; }

    // Whether the whole body is in (END_STREAM seen, within the limit).
    bool body_complete() const { return _body_done && !_body_too_large; }
    enum class body_state { open, complete, too_large, gone };
    // Waits until the request body is whole (in req().body()), over the
    // limit, the stream gone, or body_timeout from now (gone: reset here).
    // Until it is called (the request admitted) the client may send no more
    // than the stream's window: its WINDOW_UPDATEs wait for it.
    boost::asio::awaitable<body_state> wait_body();
    // The answer was given before the body: what still comes is dropped,
    // and the stream is reset (NO_ERROR) once the answer is sent.
    void drop_body();

    // The answer's head (with the headers every answer carries); `body`:
    // DATA follows through write() and finish(), else the head ends the stream.
    void respond(const response::header_type& head, const common_fields& common, bool body);
    // Queues `buffers`, waiting while more than the send buffer waits for
    // the client's window; false when the stream or the connection is gone.
    boost::asio::awaitable<bool> write(std::span<const boost::asio::const_buffer> buffers);
    void finish();
    // Ends the stream at once (RST_STREAM CANCEL): an answer that cannot be
    // completed.
    void reset();
    bool gone() const { return _gone; }

    answer_summary& summary() { return _summary; }

private:
    friend class h2_session;
    void wake();
    // The body's bytes received so far count as taken (WINDOW_UPDATE), and
    // those to come as they arrive.
    void consume_all();
    // nghttp2's data source: up to `length` bytes of the queue.
    std::size_t take(std::uint8_t* out, std::size_t length, bool& end);

    h2_session* _session;  // null once the connection is gone
    std::int32_t _id;
    request _req;
    std::size_t _head_bytes = 0;
    bool _head_refused = false;
    bool _has_declared = false;
    std::uint64_t _declared = 0;
    bool _body_done = false;
    bool _body_too_large = false;
    bool _dropping = false;
    bool _consuming = false;      // the request is admitted: windows open as bytes come
    std::size_t _unconsumed = 0;  // body bytes received before that
    bool _gone = false;
    bool _deferred = false;  // nghttp2 waits for queued bytes
    bool _finished = false;
    std::deque<std::string> _queue;
    std::size_t _queue_front = 0;  // bytes of _queue.front() already taken
    std::size_t _queued = 0;
    std::chrono::steady_clock::time_point _progress;
    boost::asio::steady_timer _timer;  // wakes a waiting coroutine
    answer_summary _summary;
};

class h2_session {
public:
    // `on_request` runs (on the strand) for each stream whose head is in.
    h2_session(connection_executor executor, const h2_limits& limits,
               std::function<void(std::shared_ptr<h2_stream>)> on_request);
    ~h2_session();
    h2_session(const h2_session&) = delete;
    h2_session& operator=(const h2_session&) = delete;

    // Bytes from the client; false when the connection must close
    // (refusal() says why when it was a flood).
    bool receive(const std::uint8_t* data, std::size_t size);
    // Appends frames to send to `out`, up to about `max` bytes.
    void take_output(std::string& out, std::size_t max);
    bool wants_io() const;
    // The writer: called whenever there may be output.
    void set_wake_writer(std::function<void()> wake) { _wake_writer = std::move(wake); }
    void wake_writer() {
        if (_wake_writer) _wake_writer();
    }

    // A graceful stop: GOAWAY; streams in flight finish.
    void drain();
    bool draining() const { return _draining; }
    // Closes for misbehaving: counts `why`, sends GOAWAY.
    void refuse(h2_refusal why);
    h2_refusal refusal() const { return _refusal; }
    // The connection ends: every stream is told.
    void close();
    // Streams whose request is being answered.
    std::size_t active_streams() const { return _streams.size(); }
    const h2_limits& limits() const { return _limits; }

private:
    friend class h2_stream;
    struct callbacks;
    // refuse(), and the callback failure that stops nghttp2.
    int fail(h2_refusal why);
    // A token bucket of `burst`, refilled at `rate` per second.
    struct bucket {
        double tokens;
        double burst;
        double rate;
        std::chrono::steady_clock::time_point at;
        bool take();
    };

    nghttp2_session* _ng = nullptr;
    connection_executor _executor;
    h2_limits _limits;
    std::function<void(std::shared_ptr<h2_stream>)> _on_request;
    std::function<void()> _wake_writer;
    std::unordered_map<std::int32_t, std::shared_ptr<h2_stream>> _streams;
    bucket _resets;
    bucket _settings;
    bucket _pings;
    std::size_t _continuations = 0;  // of the header block being received
    h2_refusal _refusal = h2_refusal::none;
    bool _draining = false;
    bool _closed = false;
};

}  // namespace dstream::edge
