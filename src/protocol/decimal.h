#pragma once
// Canonical decimal integers of the wire: digits only, no sign, no leading
// zero except in "0" itself.
#include <cstdint>
#include <optional>
#include <string_view>

namespace dstream::protocol {

// Nothing for any other text, or for more than `max_digits` digits (at most
// 19, so that every value fits).
inline std::optional<std::uint64_t> parse_canonical_decimal(std::string_view text,
                                                            std::size_t max_digits) {
    if (text.empty() || text.size() > max_digits || (text.size() > 1 && text[0] == '0')) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

}  // namespace dstream::protocol
