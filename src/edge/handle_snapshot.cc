// extensions 2.2 (publish) and 2.5 (read) of {stream}/snapshot/{offset}.
#include <charconv>

#include "edge/byte_range.h"
#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/read_common.h"
#include "edge/routing.h"
#include "edge/subresource.h"
#include "edge/write_answer.h"
#include "protocol/content_type.h"
#include "protocol/digest.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

boost::asio::awaitable<void> publish(exchange& ex, std::uint64_t offset) {
    request& req = ex.req();
    auto incarnation = incarnation_precondition(req);
    auto content_type = single_header(req, "Content-Type");
    if (!incarnation || !content_type) {
        response res = ex.make_error(!incarnation ? incarnation.err() : content_type.err());
        co_await ex.send(res);
        co_return;
    }
    state::publish_snapshot cmd;
    cmd.key = ex.target().key;
    cmd.if_incarnation = *incarnation;
    cmd.offset = offset;
    cmd.content_type = *content_type ? std::string(**content_type) : std::string(protocol::default_content_type);
    cmd.digest = protocol::snapshot_digest(cmd.content_type, req.body());
    cmd.size = req.body().size();
    cmd.body = std::move(req.body());
    state::command_body body = std::move(cmd);
    const state::apply_result r = co_await ex.service().write(body);
    response res = render_publish_answer(ex, r);
    co_await ex.send(res);
}

// `path_token`: the immutable resource's token (extensions 4.1), which is its
// precondition instead of the Stream-Incarnation header.
boost::asio::awaitable<void> read(exchange& ex, std::uint64_t offset,
                                  std::optional<std::uint64_t> path_token) {
    const bool immutable = path_token.has_value();
    auto incarnation = immutable ? result<std::optional<std::uint64_t>>(path_token)
                                 : incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    if (auto routed = route_elsewhere(ex, ex.placement(), answered_by::leader)) {
        co_await ex.send(*routed);
        co_return;
    }
    // Metadata first: 404 and 410 come before 416, then 412, then 304.
    service::snapshot_view meta = co_await ex.service().read_snapshot(ex.target().key, offset, 0, 0);
    if (meta.refusal) {
        response res = render_read_refusal(ex, *meta.refusal, meta.incarnation);
        co_await ex.send(res);
        co_return;
    }
    const std::string etag = "\"" + meta.digest + "\"";
    const bool not_modified = if_none_match_names(ex.req(), etag);
    std::optional<byte_range> range;
    if (!not_modified && ex.req().count(http::field::if_range) == 0) {
        const auto header = ex.req()[http::field::range];
        range = parse_byte_range(std::string_view(header.data(), header.size()));
    }
    // The snapshot's headers, on every answer that describes it (extensions
    // 2.5); a 416 describes no body, so it carries neither the marker nor
    // Stream-Up-To-Date (immutable-reads, the 416 row).
    const auto describe = [&](response& res, bool body_answer) {
        res.set(hdr::stream_incarnation, std::to_string(meta.incarnation));
        set_offset_header(res, hdr::stream_snapshot_offset, meta.offset);
        res.set(hdr::stream_snapshot_digest, meta.digest);
        set_offset_header(res, hdr::stream_next_offset, meta.offset);
        if (body_answer && immutable) {
            res.set(hdr::stream_immutable, "true");
        } else if (body_answer && meta.offset == meta.tail) {
            res.set(hdr::stream_up_to_date, "true");
        }
        res.set(http::field::etag, etag);
        res.set(http::field::accept_ranges, "bytes");
        res.set(http::field::cache_control, "no-store");
    };
    byte_span span{0, meta.size};
    if (range) {
        const auto selected = resolve_byte_range(*range, meta.size);
        if (!selected) {
            response res = ex.make_error(make_error(error_code::range_not_satisfiable,
                                                    "the range starts past the end of the snapshot"));
            describe(res, false);
            res.set(http::field::content_range, "bytes */" + std::to_string(meta.size));
            co_await ex.send(res);
            co_return;
        }
        span = *selected;
    }
    if (*incarnation && **incarnation != meta.incarnation) {
        response res = ex.make_error(make_error(error_code::incarnation_mismatch,
                                                "Stream-Incarnation does not match the stream"));
        res.set(hdr::stream_incarnation, std::to_string(meta.incarnation));
        co_await ex.send(res);
        co_return;
    }
    if (not_modified) {
        response res = ex.make_response(http::status::not_modified);
        describe(res, true);
        co_await ex.send(res);
        co_return;
    }
    service::snapshot_view view = co_await ex.service().read_snapshot(ex.target().key, offset, span.first, span.length);
    if (view.refusal || view.digest != meta.digest) {
        // Replaced between the two looks: answer as a fresh request would.
        response res = ex.make_error(view.refusal ? *view.refusal
                                                  : make_error(error_code::snapshot_not_found,
                                                               "no latest snapshot at this offset"));
        co_await ex.send(res);
        co_return;
    }
    response res = ex.make_response(range ? http::status::partial_content : http::status::ok);
    describe(res, true);
    res.set(http::field::content_type, view.content_type);
    if (range) {
        res.set(http::field::content_range, "bytes " + std::to_string(view.first) + "-" +
                                                 std::to_string(view.first + view.length - 1) + "/" +
                                                 std::to_string(view.size));
    }
    co_await ex.send_slices(res, view.body);
}

}  // namespace

boost::asio::awaitable<void> handle_snapshot(exchange& ex, std::uint64_t offset) {
    if (ex.req().method() == http::verb::put && ex.req().count(hdr::stream_snapshot_parts) > 0) {
        co_await handle_parts_commit(ex, offset);
    } else if (ex.req().method() == http::verb::put) {
        co_await publish(ex, offset);
    } else {
        co_await read(ex, offset, std::nullopt);
    }
}

boost::asio::awaitable<void> handle_immutable_snapshot(exchange& ex, std::uint64_t token,
                                                       std::uint64_t offset) {
    co_await read(ex, offset, token);
}

}  // namespace dstream::edge
