#include "edge/read_common.h"

#include <algorithm>
#include <charconv>

#include "edge/headers.h"
#include "edge/write_answer.h"
#include "protocol/cursor.h"
#include "runtime/clock.h"

namespace dstream::edge {

using protocol::error_code;

representation representation_for(const service::stream_view& view, surface where) {
    if (!view.json) return representation::bytes;
    return where == surface::base_v1 ? representation::json_array : representation::ndjson;
}

std::string read_content_type(const service::stream_view& view, representation rep) {
    switch (rep) {
        case representation::json_array:
            return "application/json";
        case representation::ndjson:
            return "application/x-ndjson";
        case representation::bytes:
            break;
    }
    return view.content_type;
}

std::string render_json_array(const std::vector<byte_slice>& slices) {
    std::size_t total = 2;
    for (const auto& s : slices) total += s.size;
    std::string out;
    out.reserve(total);
    out.push_back('[');
    for (const auto& s : slices) out.append(s.data, s.size);
    // Stored messages each end in LF: LFs become separators, the last one goes.
    if (out.size() > 1 && out.back() == '\n') out.pop_back();
    for (char& c : out) {
        if (c == '\n') c = ',';
    }
    out.push_back(']');
    return out;
}

result<read_params> parse_read_params(const exchange& ex) {
    const query_params& q = ex.query();
    read_params p;

    auto live = q.single("live");
    if (!live) return live.err();
    if (*live) {
        if (**live == "long-poll") {
            p.live = read_params::live_mode::long_poll;
        } else if (**live == "sse") {
            p.live = read_params::live_mode::sse;
        } else {
            return make_error(error_code::invalid_query, "live must be long-poll or sse");
        }
    }

    auto offset = q.single("offset");
    if (!offset) return offset.err();
    if (*offset) {
        auto start = protocol::parse_read_start(**offset);
        if (!start) return start.err();
        p.start = *start;
        p.offset_given = true;
    } else if (p.live != read_params::live_mode::none) {
        return make_error(error_code::invalid_query, "live reads need an offset");
    }

    auto consistency = q.single("consistency");
    if (!consistency) return consistency.err();
    if (*consistency) {
        if (**consistency != "local" && **consistency != "leader") {
            return make_error(error_code::invalid_query, "consistency must be local or leader");
        }
        if (**consistency == "leader" && p.live != read_params::live_mode::none) {
            return make_error(error_code::invalid_query,
                              "consistency=leader cannot be combined with live");
        }
        p.leader = **consistency == "leader";
    }

    auto cursor = q.single("cursor");
    if (!cursor) return cursor.err();
    p.cursor = *cursor;

    // extensions 9.1: unparseable means the default; parsed values clamp to 1..60000.
    auto timeout = q.single("timeout_ms");
    if (!timeout) return timeout.err();
    if (*timeout) {
        std::int64_t ms = 0;
        const auto& t = **timeout;
        auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
        if (ec == std::errc() && ptr == t.data() + t.size()) {
            p.long_poll_timeout = std::chrono::milliseconds(std::clamp<std::int64_t>(ms, 1, 60000));
        }
    }

    // extensions 9.3: clamp to the cap; ignore anything that is not a decimal integer.
    const std::uint64_t cap = ex.options().max_read_bytes;
    p.max_bytes = cap;
    auto max_bytes = q.single("max_bytes");
    if (!max_bytes) return max_bytes.err();
    if (*max_bytes) {
        std::uint64_t n = 0;
        const auto& t = **max_bytes;
        auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
        if (ec == std::errc() && ptr == t.data() + t.size()) {
            p.max_bytes = std::clamp<std::uint64_t>(n, 1, cap);
            p.max_bytes_given = true;
        }
    }

    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) return incarnation.err();
    p.if_incarnation = *incarnation;
    return p;
}

service::read_request make_read_request(const exchange& ex, const read_params& p,
                                        protocol::read_start start) {
    service::read_request r;
    r.key = ex.target().key;
    r.start = start;
    r.max_bytes = p.max_bytes;
    r.whole_messages = ex.target().where == surface::base_v1;
    r.if_incarnation = p.if_incarnation;
    // A single node is its groups' only voter: it leads whenever it answers.
    r.linearizable = p.leader && ex.options().cluster != nullptr;
    return r;
}

std::string read_etag(const service::stream_view& view) {
    std::string tag = "\"" + std::to_string(view.incarnation) + ":" + std::to_string(view.start) +
                      ":" + std::to_string(view.next);
    if (view.reached_closed_tail()) tag += ":c";
    return tag + "\"";
}

void add_stream_position_headers(response& res, const service::stream_view& view) {
    res.set(hdr::stream_incarnation, std::to_string(view.incarnation));
    set_offset_header(res, hdr::stream_next_offset, view.next);
    if (view.up_to_date()) res.set(hdr::stream_up_to_date, "true");
    if (view.reached_closed_tail()) res.set(hdr::stream_closed, "true");
}

bool if_none_match_names(const request& req, std::string_view etag) {
    const auto header = req[http::field::if_none_match];
    std::string_view list(header.data(), header.size());
    if (list == "*") return true;
    while (!list.empty()) {
        const auto comma = list.find(',');
        std::string_view candidate = list.substr(0, comma);
        while (!candidate.empty() && candidate.front() == ' ') candidate.remove_prefix(1);
        while (!candidate.empty() && candidate.back() == ' ') candidate.remove_suffix(1);
        if (candidate.starts_with("W/")) candidate.remove_prefix(2);
        if (candidate == etag) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

std::string live_cursor(const exchange& ex, const read_params& p) {
    return protocol::next_cursor(ex.options().clock->wall_ms(), p.cursor,
                                 ex.options().random->next());
}

boost::asio::awaitable<std::optional<admission::ticket>> admit_live_reader(exchange& ex) {
    auto place = ex.options().gate->admit_live_read(ex.target().key);
    if (!place) {
        response res =
            ex.make_error(make_error(protocol::error_code::live_read_backpressure,
                                     "the server has too many live readers; retry later"));
        co_await ex.send(res);
    }
    co_return place;
}

}  // namespace dstream::edge
