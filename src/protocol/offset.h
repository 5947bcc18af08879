#pragma once
// Stream offsets: byte positions in a stream's offset space. On the wire an
// offset is exactly 20 decimal digits, zero-padded, so that lexicographic order
// equals numeric order; `-1` and `now` are the base protocol's sentinels
// (base protocol Section 8). This file is the only place that knows the format.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace dstream::protocol {

inline constexpr std::size_t offset_digits = 20;

// Renders a byte position as its 20-digit wire form.
std::string format_offset(std::uint64_t position);
// Writes the 20-digit form into `out` (exactly offset_digits chars).
void format_offset_to(std::uint64_t position, char* out);

// Parses a 20-digit wire offset; no sentinels.
result<std::uint64_t> parse_offset(std::string_view text);

// Parses a Stream-Fork-Offset: the 20-digit form, or the Node reference
// server's form "RRRRRRRRRRRRRRRR_BBBBBBBBBBBBBBBB" (16 digits, '_', 16
// digits), whose second field is a byte position, read as ours. Clients and
// the upstream conformance suite spell the start of a stream that way.
result<std::uint64_t> parse_fork_offset(std::string_view text);

// A read's starting point: the stream's first byte, its tail, or a position.
struct read_start {
    enum class kind { beginning, now, position } where = kind::beginning;
    std::uint64_t position = 0;

    bool operator==(const read_start&) const = default;
};

// Parses the `offset` query parameter: `-1`, `now` or a 20-digit offset.
result<read_start> parse_read_start(std::string_view text);

}  // namespace dstream::protocol
