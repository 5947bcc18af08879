#include "protocol/offset.h"

namespace dstream::protocol {

void format_offset_to(std::uint64_t position, char* out) {
    for (std::size_t i = offset_digits; i-- > 0;) {
        out[i] = static_cast<char>('0' + position % 10);
        position /= 10;
    }
}

std::string format_offset(std::uint64_t position) {
    std::string out(offset_digits, '0');
    format_offset_to(position, out.data());
    return out;
}

result<std::uint64_t> parse_offset(std::string_view text) {
    if (text.size() != offset_digits) {
        return make_error(error_code::invalid_offset, "offset must be 20 decimal digits");
    }
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') {
            return make_error(error_code::invalid_offset, "offset must be 20 decimal digits");
        }
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            return make_error(error_code::invalid_offset, "offset is out of range");
        }
        value = value * 10 + digit;
    }
    return value;
}

result<std::uint64_t> parse_fork_offset(std::string_view text) {
    constexpr std::size_t field = 16;
    if (text.size() == 2 * field + 1 && text[field] == '_') {
        const auto digits = [](std::string_view t) {
            return t.find_first_not_of("0123456789") == std::string_view::npos;
        };
        const std::string_view sequence = text.substr(0, field);
        const std::string_view position = text.substr(field + 1);
        if (digits(sequence) && digits(position))
            return parse_offset(std::string(4, '0') + std::string(position));
    }
    return parse_offset(text);
}

result<read_start> parse_read_start(std::string_view text) {
    if (text == "-1") return read_start{read_start::kind::beginning, 0};
    if (text == "now") return read_start{read_start::kind::now, 0};
    auto position = parse_offset(text);
    if (!position) return position.err();
    return read_start{read_start::kind::position, *position};
}

}  // namespace dstream::protocol
