#pragma once
// What every read answer shares: the representation chosen by the URL
// surface, the read parameters, and the headers describing the stream.
#include <string>

#include "edge/exchange.h"
#include "service/stream_service.h"

namespace dstream::edge {

// How the stream's bytes are represented on this surface: a JSON stream is a
// JSON array on /v1/stream (base protocol 9.1.5) and NDJSON on the bucketed
// surface (extensions 9.4); every other stream is its bytes.
enum class representation { bytes, json_array, ndjson };
representation representation_for(const service::stream_view& view, surface where);
std::string read_content_type(const service::stream_view& view, representation rep);

// "[m1,m2]" from stored message text "m1\nm2\n".
std::string render_json_array(const std::vector<byte_slice>& slices);

// The parsed parameters of a GET on a stream (base protocol 5.6-5.8, extensions 9).
struct read_params {
    enum class live_mode { none, long_poll, sse } live = live_mode::none;
    protocol::read_start start;
    bool offset_given = false;
    std::optional<std::string> cursor;
    std::chrono::milliseconds long_poll_timeout{1000};
    std::uint64_t max_bytes = 0;  // already clamped to the cap
    bool max_bytes_given = false;
    std::optional<std::uint64_t> if_incarnation;
    bool leader = false;  // consistency=leader (extensions 9.2)
};
result<read_params> parse_read_params(const exchange& ex);

// The read request for the engine.
service::read_request make_read_request(const exchange& ex, const read_params& p,
                                        protocol::read_start start);

// A catch-up read's ETag: the incarnation and the range, varying with
// closure (base protocol 10.1).
std::string read_etag(const service::stream_view& view);

// Stream-Incarnation, Stream-Next-Offset, Stream-Up-To-Date, Stream-Closed.
void add_stream_position_headers(response& res, const service::stream_view& view);

// A fresh Stream-Cursor for a live answer.
std::string live_cursor(const exchange& ex, const read_params& p);

// A live reader's place (admission control), or nothing after answering
// 503 LIVE_READ_BACKPRESSURE because the node or the stream has no more.
boost::asio::awaitable<std::optional<admission::ticket>> admit_live_reader(exchange& ex);

// Whether the request's If-None-Match names `etag`, compared weakly as RFC
// 9110 requires (a tag a layer weakened still revalidates).
bool if_none_match_names(const request& req, std::string_view etag);

}  // namespace dstream::edge
