// The parsers of header and query values, each on raw text: the first byte
// picks the parser, the rest is the value. What a parser accepts must render
// back to the same text (the protocol's forms are canonical) or at least
// parse back to the same value.
#include <string>

#include "edge/byte_range.h"
#include "fuzz_check.h"
#include "protocol/content_type.h"
#include "protocol/cursor.h"
#include "protocol/decimal.h"
#include "protocol/digest.h"
#include "protocol/expiry.h"
#include "protocol/offset.h"
#include "protocol/producer.h"

namespace {

using namespace dstream;
using fuzz::check;

void offsets(std::string_view text) {
    if (auto v = protocol::parse_offset(text)) {
        check(protocol::format_offset(*v) == text, "an offset renders as it was sent");
    }
    if (auto start = protocol::parse_read_start(text);
        start && start->where == protocol::read_start::kind::position) {
        check(protocol::format_offset(start->position) == text,
              "a read offset renders as it was sent");
    }
    if (auto v = protocol::parse_fork_offset(text)) {
        auto again = protocol::parse_fork_offset(protocol::format_offset(*v));
        check(again && *again == *v, "a fork offset parses back from its 20-digit form");
    }
}

void expiry(std::string_view text) {
    if (auto ttl = protocol::parse_ttl_seconds(text)) {
        check(std::to_string(*ttl) == text, "a TTL is canonical");
    }
    if (auto instant = protocol::parse_rfc3339(text)) {
        const std::string rendered = protocol::format_rfc3339(*instant);
        auto again = protocol::parse_rfc3339(rendered);
        check(again && *again == *instant, "Stream-Expires-At renders as a valid RFC 3339 instant");
    }
    const auto newline = text.find('\n');
    if (newline != std::string_view::npos) {
        (void)protocol::parse_expiry(text.substr(0, newline), text.substr(newline + 1));
    }
}

void content_types(std::string_view text) {
    const std::string essence = protocol::media_type_essence(text);
    check(protocol::media_type_essence(essence) == essence, "the essence of an essence is itself");
    check(protocol::same_media_type(text, essence),
          "a content type names its essence's media type");
    check(protocol::is_json_media_type(text) == protocol::is_json_media_type(essence),
          "JSON-ness depends on the essence only");
    if (protocol::is_valid_content_type(text)) {
        check(protocol::is_valid_content_type(essence), "a valid content type has a valid essence");
    }
    (void)protocol::is_text_for_sse(text);
}

void numbers(std::string_view text) {
    if (auto v = protocol::parse_canonical_decimal(text, UINT64_MAX)) {
        check(std::to_string(*v) == text, "a canonical decimal renders as it was sent");
    }
    if (auto v = protocol::parse_producer_number(text)) {
        check(*v <= protocol::max_producer_number, "a producer number is at most 2^53 - 1");
        check(std::to_string(*v) == text, "a producer number renders as it was sent");
    }
    if (auto digest = protocol::parse_body_digest(text)) {
        check(protocol::to_hex(*digest) == text, "a digest renders as it was sent");
    }
}

void ranges(std::string_view text) {
    const auto range = edge::parse_byte_range(text);
    if (!range) return;
    for (const std::uint64_t size : {std::uint64_t{0}, std::uint64_t{1}, range->first,
                                     range->first + 1, range->last.value_or(0), UINT64_MAX}) {
        const auto span = edge::resolve_byte_range(*range, size);
        if (!span) continue;
        check(span->length > 0 && span->first < size && span->length <= size - span->first,
              "a resolved range lies inside the body");
        if (!range->suffix) check(span->first == range->first, "a range starts where it says");
    }
}

bool all_digits(std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// Numeric order of decimal texts, leading zeros aside.
bool decimal_greater(std::string_view a, std::string_view b) {
    const auto strip = [](std::string_view s) {
        while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
        return s;
    };
    a = strip(a);
    b = strip(b);
    return a.size() != b.size() ? a.size() > b.size() : a > b;
}

void cursors(std::string_view text) {
    const protocol::unix_ms now = 1'800'000'000'000;
    const std::string next = protocol::next_cursor(now, text, text.size());
    check(all_digits(next), "a cursor is decimal digits");
    // A client's cursor of digits gets a greater one back (base protocol 10.1).
    if (all_digits(text) && text.size() <= 40) {
        check(decimal_greater(next, text), "the next cursor is above the client's");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text = fuzz::as_text(data + 1, size - 1);
    switch (data[0] % 6) {
        case 0:
            offsets(text);
            break;
        case 1:
            expiry(text);
            break;
        case 2:
            content_types(text);
            break;
        case 3:
            numbers(text);
            break;
        case 4:
            ranges(text);
            break;
        case 5:
            cursors(text);
            break;
    }
    return 0;
}
