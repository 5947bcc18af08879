#pragma once
// Resolves a request target to what it addresses: a stream on one of the two
// URL surfaces, a bucket, a reserved path, or nothing.
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace dstream::edge {

enum class surface {
    base_v1,   // /v1/stream/{id}: JSON reads are JSON arrays (base protocol 9.1.5)
    bucketed,  // /{bucket_id}/{stream_id}: JSON reads are NDJSON (extensions 9.4)
};

struct route {
    enum class kind {
        stream,              // a stream itself
        stream_subresource,  // {stream}/snapshot/..., bootstrap, retention, incarnation/...
        bucket,              // /{bucket_id}
        reserved,            // /v1/stream/__ds/... (subscriptions)
        operator_path,       // /__ursula/...
        none,
    } what = kind::none;
    surface where = surface::bucketed;
    std::string key;          // the stream's key: "bucket/stream" or "v1/stream/id"
    std::string bucket;       // for kind::bucket
    // The segments after the stream, each decoded on its own: an escaped
    // '/' is data inside its segment, never a separator (RFC 3986 2.2).
    std::vector<std::string> subresource;
    std::string path;         // for operator routes: the path as requested
};

// A request target split into its path and its query (without the '?').
// An absolute-form target (RFC 9112 3.2.2) names the authority itself: only
// its path counts.
struct request_target {
    std::string_view path;
    std::string_view query;
    bool has_query = false;  // a '?' was there, even with nothing after it
};
request_target split_request_target(std::string_view target);

// Resolves a target's path: splits it into segments, then decodes each.
// Errors: an undecodable path, or a segment that is not UTF-8 once decoded
// (400 INVALID_REQUEST, before any route: extensions 8, immutable-reads
// 400), an invalid bucket or stream id (400 INVALID_BUCKET_ID /
// INVALID_STREAM_ID).
result<route> resolve_route(std::string_view path);

// The longest stream key: 122 bytes (extensions 1.1).
inline constexpr std::size_t max_stream_key_bytes = 122;

bool is_valid_bucket_id(std::string_view id);

// Percent-decoding; `plus_is_space` for query components.
result<std::string> percent_decode(std::string_view in, bool plus_is_space);

}  // namespace dstream::edge
