#pragma once
// Splits a text/event-stream body into events as its bytes arrive (the
// WHATWG parsing rules: lines end in CRLF, LF or CR; data lines join with LF;
// one space after the colon is dropped; comments, id and retry are ignored).
#include <functional>
#include <string>
#include <string_view>

namespace dstream::cli::client {

struct sse_event {
    std::string name = "message";
    std::string data;
};

class sse_reader {
public:
    // Calls `on_event` for every event the bytes complete; returns false as
    // soon as `on_event` does.
    bool feed(std::string_view bytes, const std::function<bool(const sse_event&)>& on_event);

private:
    bool line(std::string_view text, const std::function<bool(const sse_event&)>& on_event);

    std::string _partial;    // an incomplete line
    bool _after_cr = false;  // the last byte was CR: a following LF belongs to it
    sse_event _event;
    bool _has_data = false;
};

}  // namespace dstream::cli::client
