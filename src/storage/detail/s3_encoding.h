#pragma once
// The byte-level forms SigV4 signs: libcurl signs the path and the query
// exactly as sent, so they must already be in their canonical forms, and it
// takes the payload hash from our x-amz-content-sha256 header.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dstream::storage::detail {

// RFC 3986 percent-encoding of all but the unreserved characters; '/' is
// kept for an object key's path (S3 encodes keys once, never twice) and
// encoded in a query value.
enum class slash { keep, encode };
std::string s3_uri_encode(std::string_view text, slash slashes);

// name=value pairs sorted by name, both encoded, joined by '&': the only
// form of a query SigV4 accepts as its own canonical form.
using s3_query = std::vector<std::pair<std::string, std::string>>;
std::string s3_canonical_query(s3_query query);

// Lower-case hex SHA-256, the payload hash of x-amz-content-sha256.
std::string s3_sha256_hex(std::string_view bytes);

}  // namespace dstream::storage::detail
