#include "protocol/json_text.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "protocol/utf8.h"

namespace dstream::protocol {

namespace {

// The string fast path reads eight bytes as one word and finds the first
// interesting byte from the low end.
static_assert(std::endian::native == std::endian::little, "the string fast path assumes little-endian words");

constexpr std::uint64_t repeat_byte(std::uint8_t b) { return 0x0101010101010101ULL * b; }

// Flags (in bit 7 of its byte) every byte of `w` that a string literal cannot
// skip blindly: '"', '\\', a control character or a non-ASCII byte. Flags above
// the lowest one may be spurious (borrows), but the lowest one is exact.
inline std::uint64_t string_stop_bytes(std::uint64_t w) {
    constexpr std::uint64_t high = repeat_byte(0x80);
    const std::uint64_t quote = w ^ repeat_byte('"');
    const std::uint64_t backslash = w ^ repeat_byte('\\');
    const std::uint64_t has_quote = (quote - repeat_byte(0x01)) & ~quote;
    const std::uint64_t has_backslash = (backslash - repeat_byte(0x01)) & ~backslash;
    const std::uint64_t has_control = (w - repeat_byte(0x20)) & ~w;
    return (has_quote | has_backslash | has_control | w) & high;
}

inline bool is_whitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_hex_digit(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
enum class container : std::uint8_t { array, object, body_array };

// One forward pass over the body. The output is the body with some bytes
// dropped (insignificant whitespace, the body array's brackets) or replaced
// (the body array's commas become LFs), so kept bytes are copied in runs: `_run`
// marks the start of the run not yet copied.
class scanner {
public:
    scanner(std::string_view body, char* out)
        : _begin(body.data()), _p(body.data()), _end(body.data() + body.size()), _run(body.data()), _out(out) {}

    bool scan();

    char* out_end() const { return _out; }
    std::size_t count() const { return _count; }
    std::string error_message() const {
        return std::string(_error) + " at byte " + std::to_string(_error_at - _begin);
    }

private:
    bool fail(const char* what, const char* at) {
        _error = what;
        _error_at = at;
        return false;
    }

    void flush() {
        const auto n = static_cast<std::size_t>(_p - _run);
        std::memcpy(_out, _run, n);
        _out += n;
        _run = _p;
    }

    void end_message() {
        flush();
        *_out++ = '\n';
        ++_count;
    }

    void skip_whitespace() {
        if (_p != _end && is_whitespace(*_p)) {
            flush();
            do {
                ++_p;
            } while (_p != _end && is_whitespace(*_p));
            _run = _p;
        }
    }

    bool open(container kind) {
        static_assert(max_json_message_depth == 127, "the error text names the limit");
        if (_depth == _depth_limit) {
            return fail("JSON message nesting exceeds depth 127", _p);
        }
        _stack[_depth++] = kind;
        ++_p;
        skip_whitespace();
        return true;
    }

    bool scan_string();
    bool scan_number();
    bool scan_literal(std::string_view word);
    bool scan_member_name();
    bool finish();

    const char* _begin;
    const char* _p;
    const char* _end;
    const char* _run;
    char* _out;
    std::size_t _count = 0;
    bool _flatten = false;
    int _depth = 0;
    int _depth_limit = max_json_message_depth;
    std::array<container, max_json_message_depth + 1> _stack{};
    const char* _error = "";
    const char* _error_at = nullptr;
};

bool scanner::scan_string() {
    const char* p = _p + 1;
    for (;;) {
        while (_end - p >= 8) {
            std::uint64_t w;
            std::memcpy(&w, p, sizeof w);
            const std::uint64_t stops = string_stop_bytes(w);
            if (stops != 0) {
                p += std::countr_zero(stops) / 8;
                break;
            }
            p += 8;
        }
        if (p == _end) {
            return fail("invalid JSON: unexpected end of body", p);
        }
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"') {
            _p = p + 1;
            return true;
        }
        if (c == '\\') {
            if (_end - p < 2) {
                return fail("invalid JSON: unexpected end of body", _end);
            }
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case 'u':
                // Any four hex digits: a lone surrogate escape is valid text.
                if (_end - p < 6 || !is_hex_digit(p[2]) || !is_hex_digit(p[3]) || !is_hex_digit(p[4]) ||
                    !is_hex_digit(p[5])) {
                    return fail("invalid JSON: invalid \\u escape", p);
                }
                p += 6;
                break;
            default:
                return fail("invalid JSON: invalid escape", p);
            }
        } else if (c < 0x20) {
            return fail("invalid JSON: control character in string", p);
        } else if (c >= 0x80) {
            const std::size_t n = utf8_sequence_length(reinterpret_cast<const unsigned char*>(p),
                                                       static_cast<std::size_t>(_end - p));
            if (n == 0) {
                return fail("invalid UTF-8", p);
            }
            p += n;
        } else {
            ++p;
        }
    }
}

bool scanner::scan_number() {
    const char* p = _p;
    if (*p == '-') {
        ++p;
    }
    if (p == _end || !is_digit(*p)) {
        return fail("invalid JSON: invalid number", p);
    }
    // A leading zero stands alone; "01" then fails as a missing separator.
    if (*p++ != '0') {
        while (p != _end && is_digit(*p)) {
            ++p;
        }
    }
    if (p != _end && *p == '.') {
        ++p;
        if (p == _end || !is_digit(*p)) {
            return fail("invalid JSON: invalid number", p);
        }
        while (p != _end && is_digit(*p)) {
            ++p;
        }
    }
    if (p != _end && (*p == 'e' || *p == 'E')) {
        ++p;
        if (p != _end && (*p == '+' || *p == '-')) {
            ++p;
        }
        if (p == _end || !is_digit(*p)) {
            return fail("invalid JSON: invalid number", p);
        }
        while (p != _end && is_digit(*p)) {
            ++p;
        }
    }
    _p = p;
    return true;
}

bool scanner::scan_literal(std::string_view word) {
    if (static_cast<std::size_t>(_end - _p) < word.size() || std::memcmp(_p, word.data(), word.size()) != 0) {
        return fail("invalid JSON: invalid literal", _p);
    }
    _p += word.size();
    return true;
}

bool scanner::scan_member_name() {
    if (_p == _end || *_p != '"') {
        return fail(_p == _end ? "invalid JSON: unexpected end of body" : "invalid JSON: expected a member name", _p);
    }
    if (!scan_string()) {
        return false;
    }
    skip_whitespace();
    if (_p == _end || *_p != ':') {
        return fail(_p == _end ? "invalid JSON: unexpected end of body" : "invalid JSON: expected ':'", _p);
    }
    ++_p;
    skip_whitespace();
    return true;
}

bool scanner::finish() {
    skip_whitespace();
    if (_p != _end) {
        return fail("invalid JSON: unexpected data after the value", _p);
    }
    if (!_flatten) {
        end_message();
    }
    return true;
}

bool scanner::scan() {
    skip_whitespace();
    if (_p != _end && *_p == '[') {
        // The body array is not part of any message: its brackets are dropped
        // and it does not count toward a message's depth.
        _flatten = true;
        _stack[_depth++] = container::body_array;
        ++_depth_limit;
        ++_p;
        _run = _p;
        skip_whitespace();
        if (_p != _end && *_p == ']') {
            ++_p;
            _run = _p;
            --_depth;
            return finish();
        }
    }
    for (;;) {
        // A value starts at _p.
        if (_p == _end) {
            return fail("invalid JSON: unexpected end of body", _p);
        }
        switch (*_p) {
        case '{':
            if (!open(container::object)) {
                return false;
            }
            if (_p != _end && *_p == '}') {
                ++_p;
                --_depth;
                break;
            }
            if (!scan_member_name()) {
                return false;
            }
            continue;
        case '[':
            if (!open(container::array)) {
                return false;
            }
            if (_p != _end && *_p == ']') {
                ++_p;
                --_depth;
                break;
            }
            continue;
        case '"':
            if (!scan_string()) {
                return false;
            }
            break;
        case 't':
            if (!scan_literal("true")) {
                return false;
            }
            break;
        case 'f':
            if (!scan_literal("false")) {
                return false;
            }
            break;
        case 'n':
            if (!scan_literal("null")) {
                return false;
            }
            break;
        case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
            if (!scan_number()) {
                return false;
            }
            break;
        default:
            return fail("invalid JSON: expected a value", _p);
        }
        // A value ended: close containers until a comma asks for the next value.
        for (;;) {
            if (_depth == 0) {
                return finish();
            }
            skip_whitespace();
            if (_p == _end) {
                return fail("invalid JSON: unexpected end of body", _p);
            }
            const container kind = _stack[_depth - 1];
            if (*_p == ',') {
                if (kind == container::body_array) {
                    end_message();  // the comma's place in the output is the LF
                    ++_p;
                    _run = _p;
                } else {
                    ++_p;
                }
                skip_whitespace();
                if (kind == container::object && !scan_member_name()) {
                    return false;
                }
                break;
            }
            if (*_p == (kind == container::object ? '}' : ']')) {
                if (kind == container::body_array) {
                    end_message();
                    ++_p;
                    _run = _p;
                } else {
                    ++_p;
                }
                --_depth;
                continue;
            }
            return fail(kind == container::object ? "invalid JSON: expected ',' or '}'"
                                                  : "invalid JSON: expected ',' or ']'",
                        _p);
        }
    }
}

}  // namespace

result<json_messages> normalize_json_body(std::string_view body, empty_array_rule rule) {
    json_messages messages;
    // Dropping whitespace and the body array's brackets never grows the text;
    // the only added byte is the LF after a bare (non-array) message.
    messages.stored.resize(body.size() + 1);
    scanner s(body, messages.stored.data());
    if (!s.scan()) {
        return make_error(error_code::invalid_request, s.error_message());
    }
    messages.stored.resize(static_cast<std::size_t>(s.out_end() - messages.stored.data()));
    messages.count = s.count();
    if (messages.count == 0 && rule == empty_array_rule::reject) {
        return make_error(error_code::empty_append, "an empty JSON array appends no messages");
    }
    return messages;
}

}  // namespace dstream::protocol
