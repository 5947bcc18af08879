#pragma once
// Canonical decimals of the protocol's headers (Producer-Seq, Stream-Fork-
// Sub-Offset, ...): ASCII digits, no sign, no leading zero but for "0".
#include <cstdint>
#include <optional>
#include <string_view>

namespace dstream::protocol {

// The value of `text` when it is a canonical decimal no greater than `max`.
std::optional<std::uint64_t> parse_canonical_decimal(std::string_view text, std::uint64_t max);

}  // namespace dstream::protocol
