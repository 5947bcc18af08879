#pragma once
// Stream lifetime headers (base protocol Section 5.1): Stream-TTL, a sliding
// window in seconds, and Stream-Expires-At, an absolute RFC 3339 instant.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace dstream::protocol {

// Milliseconds since the Unix epoch; the one time unit of the state machine.
using unix_ms = std::int64_t;

// Milliseconds from `since` to `now`; 0 when `now` is not later (a clock may
// step back). Two readings of the full int64 range can lie further apart than
// an int64 holds: the difference is taken unsigned, never overflowing.
std::uint64_t ms_between(unix_ms since, unix_ms now);

// A stream's configured lifetime: none, a sliding TTL, or a fixed deadline.
struct expiry_config {
    std::optional<std::uint64_t> ttl_seconds;
    std::optional<unix_ms> expires_at;
    bool operator==(const expiry_config&) const = default;
};

// Stream-TTL: a non-negative decimal integer without sign, leading zeros,
// fraction or exponent.
result<std::uint64_t> parse_ttl_seconds(std::string_view text);

// Stream-Expires-At: an RFC 3339 date-time with `Z` or a numeric offset.
result<unix_ms> parse_rfc3339(std::string_view text);

// Renders an instant as RFC 3339 UTC with milliseconds: 2026-01-02T03:04:05.678Z.
std::string format_rfc3339(unix_ms instant);

// Parses both headers together; both present is a 400 (base protocol 5.1).
result<expiry_config> parse_expiry(std::optional<std::string_view> ttl,
                                   std::optional<std::string_view> expires_at);

}  // namespace dstream::protocol
