#include "edge/byte_range.h"

#include <algorithm>
#include <charconv>

namespace dstream::edge {
namespace {

std::optional<std::uint64_t> parse_position(std::string_view text) {
    std::uint64_t v = 0;
    if (text.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
}

// Range units compare case-insensitively (RFC 9110 14.1).
bool starts_with_bytes_unit(std::string_view header) {
    constexpr std::string_view unit = "bytes=";
    if (header.size() < unit.size()) return false;
    for (std::size_t i = 0; i < unit.size(); ++i) {
        const char c = header[i];
        const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
        if (lower != unit[i]) return false;
    }
    return true;
}

}  // namespace

std::optional<byte_range> parse_byte_range(std::string_view header) {
    if (!starts_with_bytes_unit(header)) return std::nullopt;
    header.remove_prefix(6);
    if (header.find(',') != std::string_view::npos) return std::nullopt;
    const auto dash = header.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    const std::string_view before = header.substr(0, dash);
    const std::string_view after = header.substr(dash + 1);
    byte_range r;
    if (before.empty()) {
        const auto n = parse_position(after);
        if (!n || *n == 0) return std::nullopt;
        r.suffix = true;
        r.first = *n;
        return r;
    }
    const auto first = parse_position(before);
    if (!first) return std::nullopt;
    r.first = *first;
    if (!after.empty()) {
        const auto last = parse_position(after);
        if (!last || *last < *first) return std::nullopt;
        r.last = *last;
    }
    return r;
}

std::optional<byte_span> resolve_byte_range(const byte_range& range, std::uint64_t size) {
    if (size == 0) return std::nullopt;
    if (range.suffix) {
        const std::uint64_t length = std::min(range.first, size);
        return byte_span{size - length, length};
    }
    if (range.first >= size) return std::nullopt;
    const std::uint64_t last = std::min(range.last.value_or(size - 1), size - 1);
    return byte_span{range.first, last - range.first + 1};
}

}  // namespace dstream::edge
