#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/read_common.h"
#include "edge/routing.h"
#include "edge/write_answer.h"

namespace dstream::edge {

boost::asio::awaitable<void> handle_head(exchange& ex) {
    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    // RFC 9110 9.3.2: the ETag a GET without an offset would send, so the
    // HEAD reads what that GET would (from the first retained byte, up to
    // the cap) and sends none of it.
    if (auto routed = route_elsewhere(ex, ex.placement(), answered_by::leader)) {
        co_await ex.send(*routed);
        co_return;
    }
    service::read_request lookup;
    lookup.key = ex.target().key;
    // extensions 9.2 note: the leader confirms its leadership for HEAD too.
    lookup.linearizable = ex.options().cluster != nullptr;
    lookup.start.where = protocol::read_start::kind::beginning;
    lookup.max_bytes = ex.options().max_read_bytes;
    lookup.whole_messages = ex.target().where == surface::base_v1;
    lookup.cold_as_files = true;
    lookup.renews_ttl = false;  // base protocol 5.1: HEAD does not renew a sliding TTL
    lookup.if_incarnation = *incarnation;
    service::stream_view view = co_await ex.service().read(lookup);
    if (view.refusal && view.refusal->code == protocol::error_code::stream_gone &&
        view.retained > 0) {
        // Retention dropped the beginning: a GET from -1 answers 410, so the
        // tag is that of the read from the first retained offset.
        lookup.start = {protocol::read_start::kind::position, view.retained};
        view = co_await ex.service().read(lookup);
    }
    if (view.refusal) {
        response res = render_read_refusal(ex, *view.refusal, view.incarnation);
        co_await ex.send(res);
        co_return;
    }
    response res = ex.make_response(http::status::ok);
    res.set(http::field::content_type, view.content_type);
    res.set(http::field::cache_control, "no-store");
    res.set(hdr::stream_incarnation, std::to_string(view.incarnation));
    set_offset_header(res, hdr::stream_next_offset, view.tail);
    set_offset_header(res, hdr::stream_retained_offset, view.retained);
    if (view.previous_incarnation) {
        res.set(hdr::stream_previous_incarnation, std::to_string(*view.previous_incarnation));
        set_offset_header(res, hdr::stream_inherited_offset, view.inherited_offset);
    }
    if (view.snapshot_offset) {
        set_offset_header(res, hdr::stream_snapshot_offset, *view.snapshot_offset);
        res.set(hdr::stream_snapshot_digest, view.snapshot_digest);
    }
    if (view.stream_closed) res.set(hdr::stream_closed, "true");
    res.set(http::field::etag, read_etag(view));
    if (view.expiry.ttl_seconds) res.set(hdr::stream_ttl, std::to_string(*view.expiry.ttl_seconds));
    if (view.expiry.expires_at) {
        res.set(hdr::stream_expires_at, protocol::format_rfc3339(*view.expiry.expires_at));
    }
    res.set(hdr::ursula_max_request_bytes, std::to_string(ex.options().max_request_bytes));
    if (auto limit = ex.service().max_snapshot_bytes()) {
        res.set(hdr::ursula_max_snapshot_bytes, std::to_string(*limit));
    }
    co_await ex.send(res);
}

}  // namespace dstream::edge
