#include "protocol/cursor.h"

#include <charconv>

namespace dstream::protocol {
namespace {

constexpr unix_ms cursor_epoch_ms = 1728432000000;  // 2024-10-09T00:00:00Z
constexpr unix_ms cursor_interval_ms = 20000;
// Jitter of 1 to 3600 seconds, in whole intervals.
constexpr std::uint64_t max_jitter_intervals = 3600 / 20;

}  // namespace

std::string next_cursor(unix_ms now, std::optional<std::string_view> client_cursor,
                        std::uint64_t jitter) {
    const auto interval = static_cast<std::uint64_t>(
        now > cursor_epoch_ms ? (now - cursor_epoch_ms) / cursor_interval_ms : 0);
    std::uint64_t cursor = interval;
    if (client_cursor) {
        std::uint64_t theirs = 0;
        const char* end = client_cursor->data() + client_cursor->size();
        auto [ptr, ec] = std::from_chars(client_cursor->data(), end, theirs);
        if (ec == std::errc() && ptr == end && theirs >= interval) {
            cursor = theirs + 1 + jitter % max_jitter_intervals;
        }
    }
    return std::to_string(cursor);
}

}  // namespace dstream::protocol
