// An incremental parser of a server-sent event stream (the WHATWG
// text/event-stream format that base protocol 5.8 uses), fed the response
// body in whatever pieces the network delivers.
//
// The payload of `event: data` events is passed on as it arrives rather than
// collected, so a subscriber can scan it without a copy; the data of every
// other event (`control`, `error`, ...) is joined, up to a limit, and handed
// over when the blank line ends the event. Lines may end in CR, LF or CRLF,
// and "data:" may or may not be followed by a space (the reference server
// sends none). No allocation once the buffers have grown.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dstream::bench {

enum class sse_event_kind { data, control, other };

class sse_listener {
public:
    // Text of the data lines of an `event: data` event, in order; between two
    // data lines of one event comes a "\n" piece.
    virtual void on_data_text(std::string_view piece) = 0;
    // The end of an event that had data lines. `text` is the joined data of
    // a control or other event (empty for data events).
    virtual void on_event(sse_event_kind kind, std::string_view text) = 0;

protected:
    ~sse_listener() = default;
};

class sse_parser {
public:
    explicit sse_parser(std::size_t text_limit = 64 * 1024);

    void feed(std::string_view bytes, sse_listener& listener);
    // Forgets a partial line or event (a new response starts).
    void reset();

private:
    enum class state { line_start, field, value_start, value, comment };
    enum class field_kind { event, data, ignored };

    void begin_value(sse_listener& listener);
    void take_value(std::string_view piece, sse_listener& listener);
    void end_line(sse_listener& listener);
    void end_event(sse_listener& listener);
    void keep_text(std::string_view piece);

    std::size_t text_limit_;
    state state_ = state::line_start;
    bool swallow_lf_ = false;  // the last line ended in CR: a following LF belongs to it
    std::string field_;        // the current line's field name (bounded)
    field_kind field_kind_ = field_kind::ignored;
    std::string name_;  // the current event's type (bounded)
    sse_event_kind kind_ = sse_event_kind::other;
    bool kind_known_ = false;  // an event line was seen: data lines stream
    std::size_t data_lines_ = 0;
    std::string text_;  // joined data lines not streamed
};

// The value of a top-level string member of a small JSON object, such as
// "streamNextOffset" in a control event; empty when absent. Offsets and
// cursors hold no escapes, so none are decoded.
std::string_view json_string_member(std::string_view json, std::string_view name);

// Whether the object has the member `name` with the value true.
bool json_true_member(std::string_view json, std::string_view name);

}  // namespace dstream::bench
