#include "sse_parser.h"

#include <algorithm>

namespace dstream::bench {
namespace {

// Field names and event types longer than this are none we know.
constexpr std::size_t kMaxName = 16;

bool is_line_end(char c) { return c == '\n' || c == '\r'; }

std::size_t value_after_member(std::string_view json, std::string_view name) {
    std::size_t at = 0;
    while ((at = json.find(name, at)) != std::string_view::npos) {
        const std::size_t end = at + name.size();
        if (at > 0 && json[at - 1] == '"' && end < json.size() && json[end] == '"') {
            std::size_t p = end + 1;
            while (p < json.size() && (json[p] == ' ' || json[p] == ':')) ++p;
            return p;
        }
        at = end;
    }
    return std::string_view::npos;
}

}  // namespace

sse_parser::sse_parser(std::size_t text_limit) : text_limit_(text_limit) {
    field_.reserve(kMaxName);
    name_.reserve(kMaxName);
    text_.reserve(std::min<std::size_t>(text_limit, 1024));
}

void sse_parser::reset() {
    state_ = state::line_start;
    swallow_lf_ = false;
    field_.clear();
    field_kind_ = field_kind::ignored;
    name_.clear();
    kind_ = sse_event_kind::other;
    kind_known_ = false;
    data_lines_ = 0;
    text_.clear();
}

void sse_parser::feed(std::string_view bytes, sse_listener& listener) {
    std::size_t i = 0;
    while (i < bytes.size()) {
        const char c = bytes[i];
        if (swallow_lf_) {
            swallow_lf_ = false;
            if (c == '\n') {
                ++i;
                continue;
            }
        }
        if (is_line_end(c)) {
            swallow_lf_ = c == '\r';
            ++i;
            if (state_ == state::line_start) {
                end_event(listener);
                continue;
            }
            if (state_ == state::field) begin_value(listener);
            end_line(listener);
            continue;
        }
        switch (state_) {
            case state::line_start:
                if (c == ':') {
                    state_ = state::comment;
                } else {
                    field_.clear();
                    field_.push_back(c);
                    state_ = state::field;
                }
                ++i;
                break;
            case state::field:
                if (c == ':') {
                    begin_value(listener);
                    state_ = state::value_start;
                } else if (field_.size() < kMaxName) {
                    field_.push_back(c);
                }
                ++i;
                break;
            case state::value_start:
                state_ = state::value;
                if (c == ' ') ++i;  // one optional space after the colon
                break;
            case state::value:
            case state::comment: {
                std::size_t end = i;
                while (end < bytes.size() && !is_line_end(bytes[end])) ++end;
                if (state_ == state::value) take_value(bytes.substr(i, end - i), listener);
                i = end;
                break;
            }
        }
    }
}

void sse_parser::begin_value(sse_listener& listener) {
    if (field_ == "event") {
        field_kind_ = field_kind::event;
        name_.clear();
        return;
    }
    if (field_ != "data") {
        field_kind_ = field_kind::ignored;
        return;
    }
    field_kind_ = field_kind::data;
    if (data_lines_++ > 0) {
        if (kind_known_ && kind_ == sse_event_kind::data) {
            listener.on_data_text("\n");
        } else {
            keep_text("\n");
        }
    }
}

void sse_parser::take_value(std::string_view piece, sse_listener& listener) {
    switch (field_kind_) {
        case field_kind::event:
            name_.append(piece.substr(0, kMaxName - std::min(kMaxName, name_.size())));
            break;
        case field_kind::data:
            if (kind_known_ && kind_ == sse_event_kind::data) {
                listener.on_data_text(piece);
            } else {
                keep_text(piece);
            }
            break;
        case field_kind::ignored:
            break;
    }
}

void sse_parser::end_line(sse_listener& listener) {
    if (field_kind_ == field_kind::event) {
        kind_ = name_ == "data"      ? sse_event_kind::data
                : name_ == "control" ? sse_event_kind::control
                                     : sse_event_kind::other;
        kind_known_ = true;
        // Data lines that came before the event line: pass them on first.
        if (kind_ == sse_event_kind::data && !text_.empty()) {
            listener.on_data_text(text_);
            text_.clear();
        }
    }
    field_kind_ = field_kind::ignored;
    state_ = state::line_start;
}

void sse_parser::end_event(sse_listener& listener) {
    if (data_lines_ > 0) {
        const sse_event_kind kind = kind_known_ ? kind_ : sse_event_kind::other;
        listener.on_event(kind, kind == sse_event_kind::data ? std::string_view{} : text_);
    }
    name_.clear();
    kind_ = sse_event_kind::other;
    kind_known_ = false;
    data_lines_ = 0;
    text_.clear();
}

void sse_parser::keep_text(std::string_view piece) {
    if (text_.size() < text_limit_) text_.append(piece.substr(0, text_limit_ - text_.size()));
}

std::string_view json_string_member(std::string_view json, std::string_view name) {
    const std::size_t p = value_after_member(json, name);
    if (p == std::string_view::npos || p >= json.size() || json[p] != '"') return {};
    const std::size_t close = json.find('"', p + 1);
    if (close == std::string_view::npos) return {};
    return json.substr(p + 1, close - p - 1);
}

bool json_true_member(std::string_view json, std::string_view name) {
    const std::size_t p = value_after_member(json, name);
    return p != std::string_view::npos && json.substr(p).starts_with("true");
}

}  // namespace dstream::bench
