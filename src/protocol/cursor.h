#pragma once
// Stream-Cursor for live reads (base protocol 10.1): the number of 20-second
// intervals since 2024-10-09T00:00:00Z, always above the client's cursor so
// that CDN cache keys keep moving.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/expiry.h"

namespace dstream::protocol {

// Whether next_cursor() takes `client_cursor` into account (a decimal number
// of at most 40 digits); without one, every reader at the same time gets the
// same cursor.
bool honours_client_cursor(std::optional<std::string_view> client_cursor);

// `jitter` is any random value; it spreads cursors that must jump ahead.
std::string next_cursor(unix_ms now, std::optional<std::string_view> client_cursor,
                        std::uint64_t jitter);

}  // namespace dstream::protocol
