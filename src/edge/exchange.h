#pragma once
// One request and the means to answer it. Handlers decide what to answer;
// this class writes it, with the headers every answer carries.
#include <array>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http.hpp>

#include "base/result.h"
#include "edge/admin_plane.h"
#include "edge/admission.h"
#include "edge/connection_stream.h"
#include "edge/message.h"
#include "edge/node_status.h"
#include "edge/query.h"
#include "edge/read_quota.h"
#include "edge/request_kind.h"
#include "edge/route.h"
#include "edge/tls_credentials.h"
#include "runtime/clock.h"
#include "runtime/cluster_map.h"
#include "runtime/random.h"
#include "service/stream_service.h"
#include "storage/hot_bytes.h"

namespace dstream::edge {

struct edge_options {
    std::string cluster_id;
    // The cluster this node belongs to (extensions 5.7 routing answers);
    // null on a single node, which answers everything itself.
    const runtime::cluster_map* cluster = nullptr;
    // Readiness and the cluster's state for the operator routes; null: always
    // ready, no /__ursula/cluster.
    const node_status* status = nullptr;
    std::uint64_t max_request_bytes = 32 * 1024 * 1024;
    std::uint64_t max_read_bytes = 8 * 1024 * 1024;
    std::chrono::seconds sse_lifetime{60};
    std::chrono::seconds idle_timeout{60};
    std::chrono::seconds body_timeout{30};
    // One info line per request on the "access" logger (off by default).
    bool access_log = false;
    admission_limits limits;
    // The node's admission control, owned by the server (never null there).
    admission* gate = nullptr;
    // Read bytes per second per client address (0: none).
    std::uint64_t client_read_bytes_per_second = 0;
    read_quota* quota = nullptr;  // owned by the server (never null there)
    // Set on the admin listener only, which serves nothing but the operator
    // routes of this plane (admin_plane.h); null on the client listener.
    admin_plane* admin = nullptr;
    // The admin listener's bearer token; empty: none required.
    std::string admin_token;
    // TLS on this listener (edge/tls_credentials.h); null: plain HTTP.
    std::shared_ptr<tls_credentials> tls;
    // The inputs of live cursors and multipart boundaries.
    const runtime::clock* clock = &runtime::system_clock();
    runtime::random_source* random = &runtime::system_random();
};

// What the connection learns of one request's answer: for the metrics, the
// access log and keep-alive.
struct answer_summary {
    request_kind kind = request_kind::other;
    unsigned status = 0;  // 0: nothing was sent
    std::uint64_t body_bytes = 0;
    bool close = false;  // the connection closes after this answer
};

// A field every answer carries beside its own, spelled for HTTP/1.1 and,
// lowercase (RFC 9113 8.2.1), for HTTP/2.
struct common_field {
    std::string_view name;
    std::string_view h2_name;
    std::string_view value;
};
// The fields every answer carries beside its own: server identity and
// browser security headers, then the CORS pair where `cors`.
class common_fields {
public:
    using list = std::array<common_field, 7>;
    common_fields(const list& all, bool cors) : _all(all), _count(cors ? 7 : 5) {}
    list::const_iterator begin() const { return _all.begin(); }
    list::const_iterator end() const { return _all.begin() + static_cast<std::ptrdiff_t>(_count); }

private:
    list _all;
    std::size_t _count;
};

class exchange {
public:
    // The exchange reports its answer in `summary`; a `close` already set
    // there (a server that drains) closes the connection after it.
    exchange(transport io, request& req, route&& r, query_params&& q,
             service::stream_service* service, const edge_options& options, answer_summary& summary)
        : _io(io),
          _stream(*io.tcp),
          _req(req),
          _route(std::move(r)),
          _query(std::move(q)),
          _service(service),
          _options(options),
          _summary(summary) {
        if (_options.cluster != nullptr && _service != nullptr && !_route.key.empty()) {
            _group = _service->place(_route.key).group;
        }
    }

    const request& req() const { return _req; }
    request& req() { return _req; }
    const route& target() const { return _route; }
    // The stream key, moved out for the command that carries it: target().key
    // is empty after. For a handler that needs the key for nothing else.
    std::string take_stream_key() { return std::move(_route.key); }
    const query_params& query() const { return _query; }
    // Whether the target has a query component, even an empty one.
    bool has_query() const;
    service::stream_service& service() { return *_service; }
    const edge_options& options() const { return _options; }
    // In a cluster: the stream's group, which NO_LEADER and OUTCOME_UNKNOWN
    // answers name (extensions 5.7 note).
    std::optional<std::uint32_t> group() const { return _group; }
    // Where the stream's group stands (extensions 5.7); on a single node,
    // which leads every group it has, the default (hosted, leading) without
    // a lookup. Before the key is taken.
    service::placement placement() const {
        return _options.cluster != nullptr ? _service->place(_route.key) : service::placement{};
    }
    bool is_head() const { return _req.method() == http::verb::head; }
    // The fields common to every answer, with CORS where a browser may read
    // this answer: the request names its Origin (Fetch sends one with every
    // cross-origin request and with every same-origin one but GET and HEAD),
    // or it is a GET, HEAD or OPTIONS, whose answer a shared cache may keep
    // and give a browser later. A server-side writer's POST, PUT or DELETE
    // is answered without them: Access-Control-Expose-Headers alone is 1 KiB,
    // more than the rest of an append's answer.
    common_fields answer_fields() const;

    // A response to fill in; every answer is sent with the fields of
    // answer_fields(). On the bucketed surface it says Cache-Control:
    // no-store (extensions 4.3 note: the node cannot tell a private stream
    // from a public one).
    response make_response(http::status status) const;
    // The base protocol's caching of a read answer (base protocol 10), on
    // /v1/stream only; the bucketed surface keeps no-store on every answer.
    void set_cache_control(response& res, std::string_view directive) const;
    // The error body of extensions Section 11, with the code's status; HEAD
    // answers carry the Content-Type and no body.
    response make_error(const error& e) const;

    boost::asio::awaitable<void> send(response& res);
    // Sends `res`'s headers with a body made of `slices` (zero-copy).
    // Waits until the client's read quota pays for `bytes` of read body.
    boost::asio::awaitable<void> pay_read_quota(std::uint64_t bytes);
    boost::asio::awaitable<void> send_slices(response& res, const std::vector<byte_slice>& slices);
    // The same, with `files` (chunk files) sent first, straight from the
    // page cache with sendfile.
    boost::asio::awaitable<void> send_files_and_slices(
        response& res, const std::vector<storage::file_slice>& files,
        const std::vector<byte_slice>& slices);
    // The same, with `cold`'s bytes first, sent as the store delivers them.
    // The head waits for its first bytes: a store that gives none leaves
    // nothing sent and returns its refusal for the caller to answer. A
    // failure after the head closes the connection: the client sees a body
    // short of its Content-Length, never wrong bytes.
    boost::asio::awaitable<status> send_streamed_and_slices(response& res,
                                                            service::cold_stream& cold,
                                                            const std::vector<byte_slice>& slices);

    // Chunked streaming (SSE).
    boost::asio::awaitable<void> begin_stream(response& res);
    boost::asio::awaitable<bool> send_chunk(std::string_view data);
    boost::asio::awaitable<void> end_stream();
    // A chunk framed already (append_chunk), in two steps, so that a live
    // reader's update can be sent where it is offered, without resuming the
    // reader: send_framed_now() writes what the socket takes at once; when
    // that is not all, send_framed_rest() writes the rest, waiting for the
    // socket. False: the client is gone. Plain HTTP/1.1 only
    // (`writes_framed_chunks()`): TLS and HTTP/2 frame what they send.
    struct chunk_progress {
        std::size_t written = 0;
        bool done = false;
        bool failed = false;
    };
    bool writes_framed_chunks() const { return _io.tls == nullptr && _io.h2 == nullptr; }
    // Appends to `out` the HTTP/1.1 chunk of `data`, then `more` (not both empty).
    static void append_chunk(std::string& out, std::string_view data, std::string_view more = {});
    // What send_framed_now() needs, kept by a caller that sends many chunks
    // from elsewhere (a live reader's deliveries): the socket and the
    // answer's count, and nothing else of the connection to touch.
    class framed_writer {
    public:
        chunk_progress send_now(std::string_view chunk) const;

    private:
        friend class exchange;
        framed_writer(int fd, std::uint64_t& body_bytes) : _fd(fd), _body_bytes(&body_bytes) {}
        int _fd;
        std::uint64_t* _body_bytes;
    };
    // Only where writes_framed_chunks(); valid for the exchange's life.
    framed_writer writer_of_framed_chunks();
    boost::asio::awaitable<bool> send_framed_rest(std::string_view chunk, std::size_t written);

    // For an answer that lasts (a live reader), once its head is sent: the
    // request keeps its line and whether the connection stays open, and
    // gives back its header fields, whose memory is the connection's field
    // block (edge/field_arena.h), held for as long as the answer otherwise.
    void keep_request_line_only();

    // The connection must close after this answer.
    void close_after() { _summary.close = true; }
    bool closing() const { return _summary.close; }

    // A snapshot part admitted from the request's head, counted while its
    // body uploads (extensions 2.2).
    void hold_part_upload(std::unique_ptr<service::part_upload> upload) {
        _part_upload = std::move(upload);
    }
    std::unique_ptr<service::part_upload> take_part_upload() { return std::move(_part_upload); }

private:
    enum class write_deadline { none, body_timeout };
    // Writes `buffers` whole, in two steps, so that the common case takes no
    // coroutine frame: write_now() writes what the socket takes without
    // waiting (`done` when that was all, or the write failed); write_rest()
    // writes the rest, waiting for the socket.
    //
    //   auto now = write_now(buffers);
    //   if (!now.done) now.ec = co_await write_rest(buffers, now.written, ...);
    //
    // An error means the client is gone.
    struct written_now {
        std::size_t written = 0;
        boost::system::error_code ec;
        bool done = false;
    };
    written_now write_now(std::span<const boost::asio::const_buffer> buffers);
    boost::asio::awaitable<boost::system::error_code> write_rest(
        std::span<const boost::asio::const_buffer> buffers, std::size_t written,
        write_deadline deadline);
    // Both steps, where a frame does not matter.
    boost::asio::awaitable<boost::system::error_code> write(
        std::span<const boost::asio::const_buffer> buffers, write_deadline deadline);
    boost::asio::awaitable<boost::system::error_code> write_file(const storage::file_slice& file);
    // A file's bytes through TLS or HTTP/2, which frame them: read in pieces.
    boost::asio::awaitable<boost::system::error_code> write_file_in_pieces(
        const storage::file_slice& file);
    // Sets the answer's length and keep-alive, counts it, and serializes its head.
    head_text body_head(response& res, std::uint64_t body_bytes);
    // HTTP/2: the head (its length set, counted) sent to the stream; DATA
    // follows unless the answer has no body.
    void h2_head(response& res, std::uint64_t body_bytes);
    // HTTP/2: `buffers` as DATA; false when the stream is gone.
    boost::asio::awaitable<bool> h2_write(std::span<const boost::asio::const_buffer> buffers);

    // Counts what was sent, once the head is on its way.
    void sent(http::status status, std::uint64_t body_bytes);

    transport _io;
    connection_stream& _stream;  // *_io.tcp: the socket, the deadlines
    request& _req;
    route _route;
    query_params _query;
    service::stream_service* _service;  // null for answers sent before routing
    const edge_options& _options;
    answer_summary& _summary;
    std::optional<std::uint32_t> _group;
    std::unique_ptr<service::part_upload> _part_upload;
};

}  // namespace dstream::edge
