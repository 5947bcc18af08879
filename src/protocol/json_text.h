#pragma once
// JSON Message Text (extensions, "JSON Message Text"): the storage rule for
// application/json streams. A write body is validated per RFC 8259 and UTF-8,
// one level of top-level array is flattened, and each message is stored as its
// original text with insignificant whitespace removed, followed by one LF.
// Nothing is reordered or rewritten; lone-surrogate \u escapes are valid.
#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace dstream::protocol {

// The deepest message the server accepts (depth counted per message, after flattening).
inline constexpr int max_json_message_depth = 127;

struct json_messages {
    std::string stored;      // normalized messages, each followed by '\n'
    std::size_t count = 0;   // number of messages in `stored`
};

// Whether an empty top-level array is a valid body: a creating PUT may carry
// `[]` (no initial messages, base protocol 9.1.3); an append may not.
enum class empty_array_rule { reject, allow };

// Validates and normalizes a whole write body. Errors: invalid JSON or UTF-8,
// depth over the limit -> invalid_request (400); an empty array under
// empty_array_rule::reject -> empty_append (400).
result<json_messages> normalize_json_body(std::string_view body, empty_array_rule rule);

}  // namespace dstream::protocol
