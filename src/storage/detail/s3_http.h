#pragma once
// One signed HTTP exchange with an S3 endpoint over libcurl, and which of
// its failures are worth another attempt. No retries here: the store decides.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/s3_object_store.h"

namespace dstream::storage::detail {

struct s3_response;

struct s3_request {
    std::string_view method;           // GET, HEAD, PUT, POST or DELETE
    std::string url;                   // scheme://host/path, the path already encoded
    std::string query;                 // in canonical form (s3_canonical_query), or empty
    std::vector<std::string> headers;  // "Name: value", signed with the rest
    std::string_view body;
    // CompleteMultipartUpload can answer 200 and fail in its body (the S3
    // API reference says so); no other call reads a 200's body as an error.
    bool error_in_ok_body = false;
    // A streamed GET: a 206 answer's body goes here as it arrives, with the
    // answer's head, instead of into s3_response::body (other answers' bodies,
    // an error's XML, still go there). False stops the transfer: the answer
    // is not the one asked for, or nobody wants the rest.
    std::function<bool(const s3_response& head, std::string_view bytes)> partial_body;
};

enum class s3_transport_fault { none, transient, fatal };

struct s3_response {
    s3_transport_fault fault = s3_transport_fault::none;
    std::string fault_text;  // curl's account of a fault (names no credential)
    long status = 0;
    std::string body;
    std::string etag;
    std::string content_range;
    std::optional<std::uint64_t> content_length;
};

// Another attempt may succeed: a connection refused or reset, a timeout,
// a 5xx (503 SlowDown included), 429, S3's 400 RequestTimeout.
bool s3_retryable(const s3_request& request, const s3_response& response);

class s3_http {
public:
    // The options' credentials, region and timeouts.
    explicit s3_http(const s3_options& options);
    // Blocks; any thread (each has its own curl handle, which keeps its connections).
    s3_response perform(const s3_request& request) const;

private:
    std::string _sigv4_scope;
    std::string _access_key_id;
    std::string _secret_access_key;
    std::string _session_token;
    std::chrono::milliseconds _connect_timeout;
    std::chrono::milliseconds _request_timeout;
};

}  // namespace dstream::storage::detail
