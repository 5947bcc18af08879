#include "edge/handle_sse.h"
#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/http_metrics.h"
#include "edge/read_common.h"
#include "edge/routing.h"
#include "edge/write_answer.h"
#include "service/live_update.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

boost::asio::awaitable<void> send_data(exchange& ex, const service::stream_view& view,
                                       const read_params& p, bool live) {
    const representation rep = representation_for(view, ex.target().where);
    response res = ex.make_response(http::status::ok);
    res.set(http::field::content_type, read_content_type(view, rep));
    add_stream_position_headers(res, view);
    const bool at_now = p.start.where == protocol::read_start::kind::now && !live;
    ex.set_cache_control(res, at_now || view.next == view.start
                                  ? "no-store"
                                  : "public, max-age=60, stale-while-revalidate=300");
    if (!at_now) {
        const std::string etag = read_etag(view);
        res.set(http::field::etag, etag);
        if (if_none_match_names(ex.req(), etag)) {
            response not_modified = ex.make_response(http::status::not_modified);
            not_modified.base() = res.base();
            not_modified.result(http::status::not_modified);
            co_await ex.send(not_modified);
            co_return;
        }
    }
    if (live && !view.reached_closed_tail()) res.set(hdr::stream_cursor, live_cursor(ex, p));
    co_await ex.pay_read_quota(view.next - view.start);
    if (rep == representation::json_array) {
        res.body() = render_json_array(view.data);
        co_await ex.send(res);
    } else if (view.streamed) {
        const status sent = co_await ex.send_streamed_and_slices(res, *view.streamed, view.data);
        if (!sent) {
            response refusal = render_read_refusal(ex, sent.err(), view.incarnation);
            co_await ex.send(refusal);
        }
    } else {
        co_await ex.send_files_and_slices(res, view.files, view.data);
    }
}

boost::asio::awaitable<void> long_poll(exchange& ex, const read_params& p,
                                       service::stream_view& view) {
    std::optional<std::chrono::steady_clock::time_point> delivered;  // of a shared update
    if (view.data.empty() && !view.reached_closed_tail()) {
        const std::optional<admission::ticket> slot = co_await admit_live_reader(ex);
        if (!slot) co_return;
        const metrics::gauge_hold waiting(http_metrics::get().long_poll_readers);
        // A server that stops ends the wait early: the answer is the one its
        // timeout would give (base protocol 5.7).
        const auto deadline = std::chrono::steady_clock::now() + p.long_poll_timeout;
        // The stream must be the one the poll was opened against (extensions 2.4).
        read_params again = p;
        again.if_incarnation = view.incarnation;
        const std::uint64_t waited_at = view.next;
        const service::read_request next = make_read_request(
            ex, again, protocol::read_start{protocol::read_start::kind::position, waited_at});
        const std::shared_ptr<const service::live_update> update =
            co_await ex.service().wait(next, deadline);
        if (update) {
            view = update->view();
            delivered = update->made_at();
        } else {
            view = co_await ex.service().read(next);
        }
        if (view.refusal) {
            response res = render_read_refusal(ex, *view.refusal, view.incarnation);
            co_await ex.send(res);
            co_return;
        }
    }
    if (!view.data.empty()) {
        co_await send_data(ex, view, p, true);
        if (delivered) http_metrics::get().record_live_delivery(*delivered);
        co_return;
    }
    // Timeout, or a closed stream at its tail: 204 (base protocol 5.7).
    response res = ex.make_response(http::status::no_content);
    res.set(http::field::cache_control, "no-store");
    add_stream_position_headers(res, view);
    if (!view.reached_closed_tail()) res.set(hdr::stream_cursor, live_cursor(ex, p));
    co_await ex.send(res);
}

boost::asio::awaitable<void> refuse(exchange& ex, error e) {
    response res = ex.make_error(e);
    co_await ex.send(res);
}

// A catch-up read or a long-poll.
boost::asio::awaitable<void> read_once(exchange& ex, read_params p) {
    const service::placement where = ex.placement();
    if (auto routed =
            route_elsewhere(ex, where, p.leader ? answered_by::leader : answered_by::replica)) {
        co_await ex.send(*routed);
        co_return;
    }
    service::read_request first = make_read_request(ex, p, p.start);
    // A catch-up read sends the bytes as stored; a long-poll may answer
    // with the bytes of a shared update instead.
    first.cold_as_files = p.live == read_params::live_mode::none;
    // A follower's long-poll then waits for its own apply.
    first.linearizable = first.linearizable || catches_up_first(ex, where);
    service::stream_view view = co_await ex.service().read(first);
    if (view.refusal) {
        response res = render_read_refusal(ex, *view.refusal, view.incarnation);
        co_await ex.send(res);
        co_return;
    }
    if (p.live == read_params::live_mode::long_poll) {
        co_await long_poll(ex, p, view);
    } else {
        co_await send_data(ex, view, p, false);
    }
}

}  // namespace

// Not a coroutine itself, so that a live SSE reader, which lasts, holds
// no frame of it beside handle_sse's.
boost::asio::awaitable<void> handle_read(exchange& ex) {
    result<read_params> params = parse_read_params(ex);
    if (!params) return refuse(ex, params.err());
    if (params->live == read_params::live_mode::sse) return handle_sse(ex, std::move(*params));
    return read_once(ex, std::move(*params));
}

}  // namespace dstream::edge
