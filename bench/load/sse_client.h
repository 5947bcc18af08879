// A streaming HTTP/1.1 client for live SSE reads (base protocol 5.8): one GET
// whose response body is an event stream that goes on as long as the server
// keeps it open. http_connection waits for whole responses; this one hands
// the body to an sse_parser as each network read brings it (chunked framing
// removed by the Beast parser) and reports events as they complete.
//
// Callback style on one io_context, like http_connection; no allocation per
// event once the buffers have grown.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http_client.h"
#include "sse_parser.h"

namespace dstream::bench {

class sse_connection;

class sse_handler {
public:
    // The response head has arrived; `base64` when the server announced
    // Stream-SSE-Data-Encoding: base64.
    virtual void on_sse_open(sse_connection& c, int status, bool base64) = 0;
    // Data event text as it arrives (see sse_listener::on_data_text).
    virtual void on_sse_data(sse_connection& c, std::string_view piece) = 0;
    // An event is complete; `text` is the data of a control or other event.
    virtual void on_sse_event(sse_connection& c, sse_event_kind kind, std::string_view text) = 0;
    // The response is over: the server ended it (no error), or the connection
    // failed (ec). For a non-2xx answer, `body` is a prefix of its body. The
    // handler may open() again from here. Not called after close().
    virtual void on_sse_end(sse_connection& c, const error_code& ec, int status,
                            std::string_view body) = 0;

protected:
    ~sse_handler() = default;
};

class sse_connection final : private body_sink, private sse_listener {
public:
    sse_connection(asio::io_context& ioc, const target& t, sse_handler& handler);
    sse_connection(const sse_connection&) = delete;
    sse_connection& operator=(const sse_connection&) = delete;

    // The GET request head for the next open(), as for http_connection.
    std::string& head() { return head_; }

    // Connects when closed, writes head() and streams the answer to the
    // handler until it ends. Not while a response is streaming.
    void open();
    // Stops reading and closes the socket; no handler call follows.
    void close();

    std::uint64_t connects() const { return connects_; }

    // Opaque slot for the scenario.
    std::size_t tag = 0;

private:
    void on_body(std::string_view piece) override;
    void on_data_text(std::string_view piece) override;
    void on_event(sse_event_kind kind, std::string_view text) override;

    void start_write();
    void read_some();
    void on_read(const error_code& ec);
    void announce_open();
    void end(const error_code& ec);

    const target& target_;
    sse_handler& handler_;
    tcp::socket sock_;
    beast::flat_buffer buffer_;
    std::string head_;
    std::optional<response_parser> parser_;
    std::string body_capture_;
    std::vector<std::string> capture_fields_{"Stream-SSE-Data-Encoding"};
    std::vector<std::string> captured_;
    sse_parser events_;
    bool active_ = false;  // a response is being read and the handler wants it
    bool announced_ = false;
    std::uint64_t connects_ = 0;
};

}  // namespace dstream::bench
