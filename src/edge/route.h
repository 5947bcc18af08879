#pragma once
// Resolves a request target to what it addresses: a stream on one of the two
// URL surfaces, a bucket, a reserved path, or nothing.
#include <string>
#include <string_view>

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
    std::string subresource;  // the decoded path after the stream, without '/'
    std::string path;         // for operator routes: the path as requested
};

// A request target split into its path and its query (without the '?').
// An absolute-form target (RFC 9112 3.2.2) names the authority itself: only
// its path counts.
struct request_target {
    std::string_view path;
    std::string_view query;
};
request_target split_request_target(std::string_view target);

// Resolves a target's path and decodes its percent-escapes.
// Errors: an undecodable path (400 INVALID_REQUEST), an invalid bucket or
// stream id (400 INVALID_BUCKET_ID / INVALID_STREAM_ID).
result<route> resolve_route(std::string_view path);

// The longest stream key: 122 bytes (extensions 1.1).
inline constexpr std::size_t max_stream_key_bytes = 122;

bool is_valid_bucket_id(std::string_view id);

// Percent-decoding; `plus_is_space` for query components.
result<std::string> percent_decode(std::string_view in, bool plus_is_space);

}  // namespace dstream::edge
