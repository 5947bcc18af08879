#include "cli/client/sse_reader.h"

namespace dstream::cli::client {

bool sse_reader::feed(std::string_view bytes,
                      const std::function<bool(const sse_event&)>& on_event) {
    for (const char c : bytes) {
        if (_after_cr) {
            _after_cr = false;
            if (c == '\n') continue;
        }
        if (c == '\r' || c == '\n') {
            _after_cr = c == '\r';
            const std::string text = std::move(_partial);
            _partial.clear();
            if (!line(text, on_event)) return false;
            continue;
        }
        _partial.push_back(c);
    }
    return true;
}

bool sse_reader::line(std::string_view text,
                      const std::function<bool(const sse_event&)>& on_event) {
    if (text.empty()) {
        // A blank line ends the event; one without data dispatches nothing.
        const bool dispatch = _has_data;
        sse_event done = std::move(_event);
        _event = sse_event{};
        _has_data = false;
        return !dispatch || on_event(done);
    }
    if (text.front() == ':') return true;
    const auto colon = text.find(':');
    const std::string_view field = text.substr(0, colon);
    std::string_view value =
        colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    if (field == "event") {
        _event.name = std::string(value);
    } else if (field == "data") {
        if (_has_data) _event.data.push_back('\n');
        _event.data.append(value);
        _has_data = true;
    }
    return true;
}

}  // namespace dstream::cli::client
