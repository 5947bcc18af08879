#pragma once
// Server-Sent Events framing (base protocol 5.8, extensions 7, 9.5).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dstream::protocol {

// Appends `event: <name>` and one `data:` line per line of `payload`. Every
// CR, LF or CRLF in the payload starts a new data line, so stream bytes can
// never end an event or inject a field.
void append_sse_event(std::string& out, std::string_view name, std::string_view payload);

// The JSON of a control event.
struct control_event {
    std::uint64_t next_offset = 0;
    std::optional<std::string> cursor;
    bool up_to_date = false;
    bool closed = false;
};
// Appends the `control` event for `c`, allocating only when `out` grows (a
// live reader sends one per update).
void append_control_event(std::string& out, const control_event& c);

// Standard base64 (RFC 4648) with padding.
void append_base64(std::string& out, std::string_view bytes);

// The bytes of standard padded base64, or nothing when `text` is not that
// (a binary stream's SSE data events, extensions 9.5).
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace dstream::protocol
