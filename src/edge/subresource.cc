#include "edge/subresource.h"

#include "protocol/offset.h"

namespace dstream::edge {
namespace {

using kind = subresource::kind;

// extensions 2.4 note: every token lies in [2^52, 2^53), written as the
// 16 decimal digits the server issues.
bool parse_token(std::string_view text, std::uint64_t& token) {
    if (text.size() != 16 || text[0] == '0') return false;
    token = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return false;
        token = token * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return token >= (std::uint64_t{1} << 52) && token < (std::uint64_t{1} << 53);
}

result<subresource> with_offset(kind what, std::string_view offset_text) {
    auto offset = protocol::parse_offset(offset_text);
    if (!offset) return offset.err();
    subresource out;
    out.what = what;
    out.offset = *offset;
    return out;
}

}  // namespace

result<subresource> parse_subresource(std::span<const std::string> segments) {
    const auto is = [&](std::size_t count, std::string_view first) {
        return segments.size() == count && segments[0] == first;
    };
    if (is(1, "bootstrap")) return subresource{kind::bootstrap};
    if (is(2, "snapshot") && segments[1] == "parts") return subresource{kind::snapshot_parts};
    // An empty offset segment names nothing, as a missing one does.
    const bool offset_given = segments.size() >= 2 && !segments[1].empty();
    if (is(2, "retention") && offset_given) return with_offset(kind::retention, segments[1]);
    if (is(2, "snapshot") && offset_given) return with_offset(kind::snapshot, segments[1]);
    if (is(3, "snapshot") && segments[2] == "parts" && offset_given) {
        // The offset of a part is checked as an offset and otherwise ignored (extensions 2.2).
        return with_offset(kind::snapshot_part, segments[1]);
    }
    if (is(4, "incarnation") && (segments[2] == "chunk" || segments[2] == "snapshot")) {
        // immutable-reads: a malformed token or offset inside the two
        // resources is INVALID_RESOURCE; any other shape is no resource (404).
        subresource out;
        out.what = segments[2] == "chunk" ? kind::immutable_chunk : kind::immutable_snapshot;
        auto offset = protocol::parse_offset(segments[3]);
        if (!parse_token(segments[1], out.token) || !offset) {
            return make_error(protocol::error_code::invalid_resource,
                              "expected incarnation/{token}/chunk|snapshot/{offset} with a token "
                              "and an offset in the form the server issues");
        }
        out.offset = *offset;
        return out;
    }
    return subresource{};
}

std::string_view allowed_methods(subresource::kind what) {
    switch (what) {
        case kind::snapshot:
            return "GET, HEAD, PUT, OPTIONS";
        case kind::snapshot_part:
            return "POST, OPTIONS";
        case kind::snapshot_parts:
            return "DELETE, OPTIONS";
        case kind::retention:
            return "PUT, OPTIONS";
        case kind::bootstrap:
            return "GET, OPTIONS";
        case kind::immutable_chunk:
        case kind::immutable_snapshot:
            return "GET, HEAD, OPTIONS";
        case kind::other:
            break;
    }
    return "OPTIONS";
}

}  // namespace dstream::edge
