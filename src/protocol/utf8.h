#pragma once
// UTF-8 well-formedness (Unicode Table 3-7): no overlongs, no encoded
// surrogates (ED A0..BF), nothing above U+10FFFF, no truncated sequences.
// Used by the JSON text rule and by the router, which refuses path segments
// that are not UTF-8 once decoded (extensions 1.1, 8; immutable-reads 400).
#include <cstddef>
#include <string_view>

namespace dstream::protocol {

inline bool is_utf8_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed sequence at `p` (lead byte >= 0x80), or 0.
inline std::size_t utf8_sequence_length(const unsigned char* p, std::size_t available) {
    const unsigned char lead = p[0];
    if (lead < 0xC2) return 0;
    if (lead < 0xE0) return available >= 2 && is_utf8_continuation(p[1]) ? 2 : 0;
    if (lead < 0xF0) {
        if (available < 3) return 0;
        const unsigned char lo = lead == 0xE0 ? 0xA0 : 0x80;
        const unsigned char hi = lead == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && is_utf8_continuation(p[2]) ? 3 : 0;
    }
    if (lead < 0xF5) {
        if (available < 4) return 0;
        const unsigned char lo = lead == 0xF0 ? 0x90 : 0x80;
        const unsigned char hi = lead == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && is_utf8_continuation(p[2]) &&
                       is_utf8_continuation(p[3])
                   ? 4
                   : 0;
    }
    return 0;
}

inline bool is_valid_utf8(std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        if (*p < 0x80) {
            ++p;
            continue;
        }
        const std::size_t n = utf8_sequence_length(p, static_cast<std::size_t>(end - p));
        if (n == 0) return false;
        p += n;
    }
    return true;
}

}  // namespace dstream::protocol
