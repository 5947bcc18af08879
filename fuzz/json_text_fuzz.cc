// The JSON message text scanner (protocol/json_text, extensions "JSON Message
// Text"). Whatever it accepts, it stores exactly what a plain rewrite written
// here stores: the body without the whitespace outside string literals, its
// top-level array (one level) split into messages, each followed by one LF.
// Nothing else may change, not a byte of a number or a string; the scanner's
// own output normalizes to itself, and a message stores the same whether it
// comes alone or inside a body array.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "protocol/json_text.h"

namespace {

using namespace dstream;
using fuzz::check;

// The body "[m1,m2,...]" whose messages are the stored lines "m1\nm2\n...".
std::string as_array_body(std::string_view stored) {
    std::string body = "[";
    body.append(stored);
    if (body.back() == '\n') body.pop_back();
    std::replace(body.begin(), body.end(), '\n', ',');
    body.push_back(']');
    return body;
}

// The insignificant whitespace of RFC 8259 (space, tab, LF, CR) removed from
// outside string literals; every other byte kept as it is. Inside a literal a
// backslash and the byte after it are copied as a pair, so an escaped quote
// does not end the literal.
std::string strip_whitespace(std::string_view text) {
    std::string out;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            out.push_back(c);
            if (c == '\\' && i + 1 < text.size()) {
                out.push_back(text[++i]);
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        if (c == '"') in_string = true;
        out.push_back(c);
    }
    return out;
}

// The messages of a valid body without whitespace: the elements of a
// top-level array, split at its own commas (outside nested values and string
// literals), or the whole body as one message.
std::vector<std::string_view> split_messages(std::string_view text) {
    if (text.empty() || text.front() != '[') return {text};
    check(text.back() == ']', "a valid array body ends with ']'");
    const std::string_view inner = text.substr(1, text.size() - 2);
    std::vector<std::string_view> messages;
    if (inner.empty()) return messages;
    int depth = 0;
    bool in_string = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < inner.size(); ++i) {
        const char c = inner[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            ++depth;
        } else if (c == ']' || c == '}') {
            --depth;
        } else if (c == ',' && depth == 0) {
            messages.push_back(inner.substr(start, i - start));
            start = i + 1;
        }
    }
    messages.push_back(inner.substr(start));
    return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body = fuzz::as_text(data, size);
    auto allowed = protocol::normalize_json_body(body, protocol::empty_array_rule::allow);
    auto refused = protocol::normalize_json_body(body, protocol::empty_array_rule::reject);
    check(refused.ok() == (allowed.ok() && allowed->count > 0),
          "the empty-array rule only refuses bodies without messages");
    if (!allowed) {
        check(allowed.err().code == protocol::error_code::invalid_request, "a bad body is a 400");
        return 0;
    }
    const std::string& stored = allowed->stored;
    check(stored.size() <= body.size() + 1, "normalizing never grows the text but for one LF");
    check(
        static_cast<std::size_t>(std::count(stored.begin(), stored.end(), '\n')) == allowed->count,
        "each message ends in the only LF it holds");
    check(allowed->count == 0 || stored.back() == '\n', "the stored text ends with a message's LF");

    // What the scanner must have stored, computed without it.
    const std::string stripped = strip_whitespace(body);
    const std::vector<std::string_view> messages = split_messages(stripped);
    std::string expected;
    for (const std::string_view m : messages) {
        expected.append(m);
        expected.push_back('\n');
    }
    check(allowed->count == messages.size(), "one message per element of a body array, else one");
    check(stored == expected,
          "the stored text is the body without whitespace outside strings, byte for byte");
    if (allowed->count == 0) return 0;

    auto again =
        protocol::normalize_json_body(as_array_body(stored), protocol::empty_array_rule::reject);
    check(again.ok(), "stored messages are valid JSON");
    check(again->stored == stored && again->count == allowed->count,
          "stored messages are already normalized");

    // One level of flattening, whichever way a message arrives: alone in a
    // body array it stores as itself; a body that is not an array stores the
    // same when sent as the only element of one.
    for (const std::string_view m : messages) {
        auto alone = protocol::normalize_json_body("[" + std::string(m) + "]",
                                                   protocol::empty_array_rule::reject);
        check(alone.ok() && alone->count == 1 && alone->stored == std::string(m) + "\n",
              "a message alone in a body array stores as itself");
    }
    if (stripped.front() != '[') {
        auto wrapped = protocol::normalize_json_body("[" + std::string(body) + "]",
                                                     protocol::empty_array_rule::reject);
        check(wrapped.ok() && wrapped->count == 1 && wrapped->stored == stored,
              "a body and the array of that one body store the same message");
    }
    return 0;
}
