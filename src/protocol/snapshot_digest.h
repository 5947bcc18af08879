#pragma once
// Stream-Snapshot-Digest (extensions 2.2): BLAKE3-256 of the content type's
// length (u64 little-endian), the content type and the body. A client sends it
// to commit a snapshot uploaded in parts.
#include <string_view>

#include "protocol/producer.h"

namespace dstream::protocol {

// Hashes the body in place, without a copy, so a mapped file of any size fits.
body_digest snapshot_digest(std::string_view content_type, std::string_view body);

}  // namespace dstream::protocol
