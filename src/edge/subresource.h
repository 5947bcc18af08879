#pragma once
// Stream subresources (extensions 2, 3): {stream}/snapshot/{offset},
// {stream}/snapshot/{offset}/parts, {stream}/snapshot/parts,
// {stream}/retention/{offset}, {stream}/bootstrap.
#include <cstdint>
#include <string_view>

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
        other
    } what = kind::other;
    std::uint64_t offset = 0;
    std::uint64_t token = 0;
};

// Parses the decoded path after the stream; an offset that is not in the
// server's form is a 400 INVALID_OFFSET, a malformed immutable resource a 400
// INVALID_RESOURCE.
result<subresource> parse_subresource(std::string_view path);

}  // namespace dstream::edge
