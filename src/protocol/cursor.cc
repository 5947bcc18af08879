#include "protocol/cursor.h"

#include <algorithm>

namespace dstream::protocol {
namespace {

constexpr unix_ms cursor_epoch_ms = 1728432000000;  // 2024-10-09T00:00:00Z
constexpr unix_ms cursor_interval_ms = 20000;
// Jitter of 1 to 3600 seconds, in whole intervals.
constexpr std::uint64_t max_jitter_intervals = 3600 / 20;
// Longer cursors are not ours: ignored rather than echoed forever.
constexpr std::size_t max_cursor_digits = 40;

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view strip_zeros(std::string_view s) {
    while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
    return s;
}

// Numeric comparison of canonical decimal strings.
bool decimal_less(std::string_view a, std::string_view b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// Decimal addition on strings: a cursor is opaque text, so a client's cursor
// past 2^64 still gets a strictly greater one.
std::string decimal_add(std::string_view a, std::uint64_t b) {
    std::string out;
    std::uint64_t carry = b;
    for (std::size_t i = a.size(); i > 0 || carry > 0;) {
        const std::uint64_t digit = i > 0 ? static_cast<std::uint64_t>(a[--i] - '0') : 0;
        const std::uint64_t sum = digit + carry % 10;
        out.push_back(static_cast<char>('0' + sum % 10));
        carry = carry / 10 + sum / 10;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

}  // namespace

bool honours_client_cursor(std::optional<std::string_view> client_cursor) {
    return client_cursor && all_digits(*client_cursor) && client_cursor->size() <= max_cursor_digits;
}

std::string next_cursor(unix_ms now, std::optional<std::string_view> client_cursor,
                        std::uint64_t jitter) {
    const auto interval = std::to_string(static_cast<std::uint64_t>(
        now > cursor_epoch_ms ? (now - cursor_epoch_ms) / cursor_interval_ms : 0));
    if (honours_client_cursor(client_cursor)) {
        const std::string_view theirs = strip_zeros(*client_cursor);
        if (!decimal_less(theirs, interval)) {
            return decimal_add(theirs, 1 + jitter % max_jitter_intervals);
        }
    }
    return interval;
}

}  // namespace dstream::protocol
