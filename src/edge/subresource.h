#pragma once
// Stream subresources (extensions 2, 3, 4): {stream}/snapshot/{offset},
// {stream}/snapshot/{offset}/parts, {stream}/snapshot/parts,
// {stream}/retention/{offset}, {stream}/bootstrap,
// {stream}/incarnation/{token}/chunk|snapshot/{offset}.
#include <cstdint>
#include <span>
#include <string>

#include "base/result.h"

namespace dstream::edge {

struct subresource {
    enum class kind {
        snapshot,
        snapshot_part,   // snapshot/{offset}/parts: stage a part
        snapshot_parts,  // snapshot/parts: discard the staged parts
        retention,
        bootstrap,
        immutable_chunk,     // incarnation/{token}/chunk/{offset}
        immutable_snapshot,  // incarnation/{token}/snapshot/{offset}
        other                // no such subresource: 404 (extensions 1.6)
    } what = kind::other;
    std::uint64_t offset = 0;
    std::uint64_t token = 0;
};

// Parses the decoded segments after the stream. A path of no known shape is
// kind::other; within a known shape, an offset that is not in the server's
// form is a 400 INVALID_OFFSET, and a token or offset of an immutable
// resource that is not a 400 INVALID_RESOURCE.
result<subresource> parse_subresource(std::span<const std::string> segments);

// The methods a subresource defines, for a 405's Allow (RFC 9110 15.5.6).
std::string_view allowed_methods(subresource::kind what);

}  // namespace dstream::edge
