#pragma once
// The Range header of snapshot reads (extensions 2.5): one byte range of
// RFC 9110 14.1.2, "bytes=first-last", "bytes=first-" or "bytes=-suffix".
// Anything else (several ranges, another unit, unparseable) is ignored and
// the whole body is sent, as RFC 9110 14.2 allows.
#include <cstdint>
#include <optional>
#include <string_view>

namespace dstream::edge {

struct byte_range {
    bool suffix = false;  // "-suffix": the last `first` bytes
    std::uint64_t first = 0;
    std::optional<std::uint64_t> last;  // inclusive; none for "first-"
};

std::optional<byte_range> parse_byte_range(std::string_view header);

// The bytes [first, first + length) a range selects from a body of `size`
// bytes; none when it is not satisfiable (416).
struct byte_span {
    std::uint64_t first = 0;
    std::uint64_t length = 0;
};

std::optional<byte_span> resolve_byte_range(const byte_range& range, std::uint64_t size);

}  // namespace dstream::edge
