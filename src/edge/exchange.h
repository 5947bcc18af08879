#pragma once
// One request and the means to answer it. Handlers decide what to answer;
// this class writes it, with the headers every answer carries.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http.hpp>

#include "base/result.h"
#include "edge/connection_stream.h"
#include "edge/message.h"
#include "edge/query.h"
#include "edge/route.h"
#include "service/stream_service.h"
#include "storage/hot_bytes.h"

namespace dstream::edge {

struct edge_options {
    std::string cluster_id;
    std::uint64_t max_request_bytes = 32 * 1024 * 1024;
    std::uint64_t max_read_bytes = 8 * 1024 * 1024;
    std::chrono::seconds sse_lifetime{60};
    std::chrono::seconds idle_timeout{60};
    std::chrono::seconds body_timeout{30};
};

class exchange {
public:
    exchange(connection_stream& stream, request& req, route r, query_params q,
             service::stream_service* service, const edge_options& options)
        : _stream(stream),
          _req(req),
          _route(std::move(r)),
          _query(std::move(q)),
          _service(service),
          _options(options) {}

    const request& req() const { return _req; }
    request& req() { return _req; }
    const route& target() const { return _route; }
    const query_params& query() const { return _query; }
    service::stream_service& service() { return *_service; }
    const edge_options& options() const { return _options; }
    bool is_head() const { return _req.method() == http::verb::head; }

    // A response with the headers every answer carries (server identity,
    // browser security headers, CORS).
    response make_response(http::status status) const;
    // The error body of extensions Section 11, with the code's status; HEAD
    // answers carry the Content-Type and no body.
    response make_error(const error& e) const;

    boost::asio::awaitable<void> send(response& res);
    // Sends `res`'s headers with a body made of `slices` (zero-copy).
    boost::asio::awaitable<void> send_slices(response& res,
                                             const std::vector<storage::byte_slice>& slices);

    // Chunked streaming (SSE).
    boost::asio::awaitable<void> begin_stream(response& res);
    boost::asio::awaitable<bool> send_chunk(std::string_view data);
    boost::asio::awaitable<void> end_stream();

    // The connection must close after this answer.
    void close_after() { _close = true; }
    bool closing() const { return _close; }

private:
    connection_stream& _stream;
    request& _req;
    route _route;
    query_params _query;
    service::stream_service* _service;  // null for answers sent before routing
    const edge_options& _options;
    bool _close = false;
};

}  // namespace dstream::edge
