#include "protocol/sse.h"

#include <cstring>

#include "protocol/offset.h"

namespace dstream::protocol {

void append_sse_event(std::string& out, std::string_view name, std::string_view payload) {
    out.append("event: ").append(name).append("\n");
    // A reader drops one space after "data:", so a line that starts with a
    // space gets one more (clients of the base protocol expect "data:" with
    // no space otherwise). A payload that ends in a line break gets a last,
    // empty data line, so the reader rebuilds the break.
    std::size_t pos = 0;
    while (true) {
        const std::size_t brk = payload.find_first_of("\r\n", pos);
        const std::string_view line = payload.substr(pos, brk - pos);
        out.append(line.starts_with(' ') ? "data: " : "data:").append(line).append("\n");
        if (brk == std::string_view::npos) break;
        pos = brk + 1;
        if (payload[brk] == '\r' && pos < payload.size() && payload[pos] == '\n') ++pos;
    }
    out.append("\n");
}

namespace {

void append_control_json(std::string& out, const control_event& c) {
    out.append("{\"streamNextOffset\":\"");
    const std::size_t at = out.size();
    out.resize(at + offset_digits);
    format_offset_to(c.next_offset, out.data() + at);
    out.push_back('"');
    if (c.cursor) out.append(",\"streamCursor\":\"").append(*c.cursor).push_back('"');
    if (c.up_to_date) out.append(",\"upToDate\":true");
    if (c.closed) out.append(",\"streamClosed\":true");
    out.push_back('}');
}

}  // namespace

void append_control_event(std::string& out, const control_event& c) {
    // The JSON holds no line break, so it is one data line.
    out.append("event: control\ndata:");
    append_control_json(out, c);
    out.append("\n\n");
}

namespace {

constexpr char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// A character's 6-bit value, or -1.
int base64_value(char c) {
    const char* at = std::strchr(base64_alphabet, c);
    return c != '\0' && at != nullptr ? static_cast<int>(at - base64_alphabet) : -1;
}

}  // namespace

void append_base64(std::string& out, std::string_view bytes) {
    constexpr const char* alphabet = base64_alphabet;
    out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
        out.push_back(alphabet[n >> 18 & 63]);
        out.push_back(alphabet[n >> 12 & 63]);
        out.push_back(alphabet[n >> 6 & 63]);
        out.push_back(alphabet[n & 63]);
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        if (rest == 2)
            n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        out.push_back(alphabet[n >> 18 & 63]);
        out.push_back(alphabet[n >> 12 & 63]);
        out.push_back(rest == 2 ? alphabet[n >> 6 & 63] : '=');
        out.push_back('=');
    }
}

std::optional<std::string> decode_base64(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        // Padding only at the very end: "xx==" or "xxx=".
        const int pad = last && text[i + 3] == '=' ? (text[i + 2] == '=' ? 2 : 1) : 0;
        std::uint32_t n = 0;
        for (int k = 0; k < 4; ++k) {
            const int v = k >= 4 - pad ? 0 : base64_value(text[i + static_cast<std::size_t>(k)]);
            if (v < 0) return std::nullopt;
            n = n << 6 | static_cast<std::uint32_t>(v);
        }
        out.push_back(static_cast<char>(n >> 16 & 0xff));
        if (pad < 2) out.push_back(static_cast<char>(n >> 8 & 0xff));
        if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
    }
    return out;
}

}  // namespace dstream::protocol
