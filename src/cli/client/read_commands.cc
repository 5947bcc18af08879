// head, read (catch-up until up to date) and tail (live, SSE or long-poll).
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/client/client_commands.h"
#include "cli/client/common.h"
#include "cli/client/progress.h"
#include "cli/client/report.h"
#include "cli/client/sse_reader.h"
#include "edge/headers.h"
#include "protocol/content_type.h"
#include "protocol/sse.h"

namespace dstream::cli::client {
namespace {

namespace hdr = edge::hdr;

// Where a piece of stream data sits, for --json: one object per piece.
struct position {
    std::string offset;
    std::string next_offset;
    bool up_to_date = false;
    bool closed = false;
};

void print_piece(const position& at, std::string_view content_type, std::string_view bytes) {
    nlohmann::json j{{"offset", at.offset},
                     {"next_offset", at.next_offset},
                     {"up_to_date", at.up_to_date},
                     {"closed", at.closed}};
    add_data(j, content_type, bytes);
    print_json(j);
}

void emit(bool json, const position& at, std::string_view content_type, std::string_view bytes) {
    if (json) {
        print_piece(at, content_type, bytes);
    } else {
        write_data(content_type, bytes);
    }
}

int missing_next_offset(bool json) {
    response broken;
    broken.failure = "the answer has no Stream-Next-Offset";
    return report_failure(broken, json);
}

int run_head(const url_options& o) {
    session s(o.common.headers, o.common.cacert);
    return report(s.perform({.method = "HEAD", .url = o.common.url}), o.common.json);
}

struct read_options {
    common_options common;
    std::string offset = "-1";
    std::optional<std::uint64_t> max_bytes;
};

// Catch-up reads, each from the last one's Stream-Next-Offset, until one
// says Stream-Up-To-Date (base protocol 5.6).
int run_read(const read_options& o) {
    session s(o.common.headers, o.common.cacert);
    progress meter("read", 0);
    std::uint64_t total = 0;
    position at{.offset = o.offset};
    while (true) {
        std::string query = "offset=" + at.offset;
        if (o.max_bytes) query += "&max_bytes=" + std::to_string(*o.max_bytes);
        request r{.url = with_query(o.common.url, query)};
        r.on_progress = [&](std::uint64_t, std::uint64_t received) {
            meter.update(total + received);
        };
        const response res = s.perform(r);
        if (!res.ok()) return report_failure(res, o.common.json);
        total += res.body.size();
        const auto next = res.header(hdr::stream_next_offset);
        if (!next) return missing_next_offset(o.common.json);
        at.next_offset = *next;
        at.up_to_date = res.header_is_true(hdr::stream_up_to_date);
        at.closed = res.header_is_true(hdr::stream_closed);
        emit(o.common.json, at, res.header("Content-Type").value_or(""), res.body);
        // A read that moved nothing and is not up to date would repeat forever.
        if (at.up_to_date || at.closed || at.next_offset == at.offset) return exit_ok;
        at.offset = at.next_offset;
    }
}

struct tail_options {
    common_options common;
    std::string offset = "now";
    bool long_poll = false;
};

// A live read that ended in an error event (extensions 11): its data is the error body.
int report_error_event(const std::string& data, bool json) {
    response ended;
    ended.status = 200;
    ended.reason = "OK, then the live read ended with an error event";
    ended.body = data;
    return report_failure(ended, json);
}

// SSE reads (base protocol 5.8), reconnecting from the last control event's
// offset and cursor when the server ends one (it does after a while so that
// caches can collapse readers).
int tail_sse(session& s, const tail_options& o, const std::string& stream_type) {
    position at{.offset = o.offset};
    std::optional<std::string> cursor;
    while (true) {
        std::string query = "offset=" + at.offset + "&live=sse";
        if (cursor) query += "&cursor=" + *cursor;
        sse_reader reader;
        std::string pending;  // a data event's bytes, printed with its control event under --json
        std::string data_type = stream_type;
        std::optional<std::string> error_event;
        bool base64 = false;
        request r{.url = with_query(o.common.url, query)};
        r.sink = [&](const response& head, std::string_view bytes) {
            base64 = head.header(hdr::stream_sse_data_encoding) == "base64";
            // The bucketed surface reads JSON as NDJSON and says so.
            data_type = head.header(hdr::stream_data_content_type).value_or(stream_type);
            return reader.feed(bytes, [&](const sse_event& ev) {
                if (ev.name == "data") {
                    auto bytes_of_event = base64 ? protocol::decode_base64(ev.data) : ev.data;
                    if (!bytes_of_event) {
                        error_event =
                            R"({"error":{"code":"INVALID_BASE64","message":"a data event is not base64"}})";
                        return false;
                    }
                    if (o.common.json) {
                        pending += *bytes_of_event;
                    } else {
                        write_data(data_type, *bytes_of_event);
                    }
                    return true;
                }
                if (ev.name == "control") {
                    const auto control = nlohmann::json::parse(ev.data, nullptr, false);
                    if (!control.is_object()) return true;
                    const std::string from = at.offset;
                    at.offset = control.value("streamNextOffset", at.offset);
                    at.next_offset = at.offset;
                    at.up_to_date = control.value("upToDate", false);
                    at.closed = control.value("streamClosed", false);
                    if (control.contains("streamCursor"))
                        cursor = control.value("streamCursor", "");
                    // Under --json a closure is news even without data.
                    if (o.common.json && (!pending.empty() || at.closed)) {
                        print_piece({from, at.next_offset, at.up_to_date, at.closed}, data_type,
                                    pending);
                        pending.clear();
                    }
                    return !at.closed;
                }
                if (ev.name == "error") {
                    error_event = ev.data;
                    return false;
                }
                return true;
            });
        };
        const response res = s.perform(r);
        if (!res.ok()) return report_failure(res, o.common.json);
        if (error_event) return report_error_event(*error_event, o.common.json);
        if (at.closed) return exit_ok;
    }
}

// Long-polls (base protocol 5.7): each waits for data after the last offset.
int tail_long_poll(session& s, const tail_options& o) {
    position at{.offset = o.offset};
    std::optional<std::string> cursor;
    while (true) {
        std::string query = "offset=" + at.offset + "&live=long-poll";
        if (cursor) query += "&cursor=" + *cursor;
        const response res = s.perform({.url = with_query(o.common.url, query)});
        if (!res.ok()) return report_failure(res, o.common.json);
        const auto next = res.header(hdr::stream_next_offset);
        if (!next) return missing_next_offset(o.common.json);
        at.next_offset = *next;
        at.up_to_date = res.header_is_true(hdr::stream_up_to_date);
        at.closed = res.header_is_true(hdr::stream_closed);
        if (!res.body.empty())
            emit(o.common.json, at, res.header("Content-Type").value_or(""), res.body);
        if (at.closed && at.up_to_date) return exit_ok;
        if (auto c = res.header(hdr::stream_cursor)) cursor = std::move(c);
        at.offset = at.next_offset;
    }
}

int run_tail(const tail_options& o) {
    session s(o.common.headers, o.common.cacert);
    // The stream's type says how SSE data events carry it (JSON arrays on
    // /v1/stream); the HEAD also reports a missing stream plainly.
    const response head = s.perform({.method = "HEAD", .url = o.common.url});
    if (!head.ok()) return report_failure(head, o.common.json);
    if (o.long_poll) return tail_long_poll(s, o);
    return tail_sse(
        s, o, head.header("Content-Type").value_or(std::string(protocol::default_content_type)));
}

}  // namespace

void add_read_commands(CLI::App& app, std::vector<command>& out) {
    {
        auto [cmd, o] = add_client_command(
            app, out,
            {"read",
             "Print a stream's data from an offset until up to date, following "
             "Stream-Next-Offset across answers (base protocol 5.6); JSON streams print one "
             "message per line",
             "dstream read http://127.0.0.1:4437/v1/stream/greeting --offset -1"},
            run_read);
        cmd->add_option("--offset", o->offset,
                        "Where to start: -1 (the beginning), now, or an offset")
            ->capture_default_str();
        cmd->add_option("--max-bytes", o->max_bytes,
                        "At most this many bytes per answer (extensions 9.3)");
    }
    {
        auto [cmd, o] = add_client_command(
            app, out,
            {"tail",
             "Follow a stream live, printing data as it arrives, until the stream is closed or "
             "the command is interrupted (SSE, base protocol 5.8; --long-poll: 5.7)",
             "dstream tail http://127.0.0.1:4437/my-app/chat-1 --offset -1"},
            run_tail);
        cmd->add_option("--offset", o->offset,
                        "Where to start: now (only new data), -1, or an offset")
            ->capture_default_str();
        cmd->add_flag("--long-poll", o->long_poll, "Use long-polls instead of SSE");
    }
    add_client_command(
        app, out,
        {"head",
         "Print a stream's metadata: tail offset, content type, closure, TTL, "
         "snapshot, retention, incarnation (HEAD; base protocol 5.5, extensions 2.4)",
         "dstream head http://127.0.0.1:4437/v1/stream/greeting --json"},
        run_head);
}

}  // namespace dstream::cli::client
