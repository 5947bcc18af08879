// The JSON message text scanner (protocol/json_text, extensions "JSON Message
// Text"). Whatever it accepts, its output is already normalized: the stored
// messages, given back as one array body, normalize to themselves.
#include <algorithm>
#include <string>

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
    if (allowed->count == 0) return 0;

    auto again =
        protocol::normalize_json_body(as_array_body(stored), protocol::empty_array_rule::reject);
    check(again.ok(), "stored messages are valid JSON");
    check(again->stored == stored && again->count == allowed->count,
          "stored messages are already normalized");
    return 0;
}
