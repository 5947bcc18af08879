#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/this_coro.hpp>

#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/http_metrics.h"
#include "edge/read_common.h"
#include "edge/routing.h"
#include "edge/write_answer.h"
#include "protocol/content_type.h"
#include "protocol/cursor.h"
#include "protocol/sse.h"
#include "service/live_subscription.h"
#include "service/live_update.h"

namespace dstream::edge {
namespace {

// The most rendered event bytes one write of a live reader carries.
constexpr std::size_t coalesced_bytes = 256 * 1024;

// One data event for `view`'s bytes in the surface's representation.
void append_data_event(std::string& out, const service::stream_view& view, representation rep,
                       bool base64) {
    if (rep == representation::json_array) {
        protocol::append_sse_event(out, "data", render_json_array(view.data));
        return;
    }
    std::string payload;
    for (const auto& s : view.data) {
        if (base64) continue;
        payload.append(s.data, s.size);
    }
    if (base64) {
        std::string joined;
        for (const auto& s : view.data) joined.append(s.data, s.size);
        protocol::append_base64(payload, joined);
    }
    protocol::append_sse_event(out, "data", payload);
}

// A text event must hold whole UTF-8 characters (extensions 9.3): drop an
// incomplete sequence at the end of a shortened read; the next event starts
// with it.
void end_on_character(service::stream_view& view) {
    if (view.next == view.tail || view.data.empty()) return;
    std::string_view last = view.data.back().view();
    std::size_t back = 0;
    // Walk back over continuation bytes to the sequence's lead byte.
    while (back < 3 && back < last.size() &&
           (static_cast<unsigned char>(last[last.size() - 1 - back]) & 0xC0) == 0x80) {
        ++back;
    }
    if (back >= last.size()) return;
    const auto lead = static_cast<unsigned char>(last[last.size() - 1 - back]);
    const std::size_t need = lead < 0x80    ? 1
                             : lead >= 0xF0 ? 4
                             : lead >= 0xE0 ? 3
                             : lead >= 0xC0 ? 2
                                            : 1;
    if (need > back + 1) {
        const std::size_t drop = back + 1;
        view.data.back().size -= drop;
        view.next -= drop;
        if (view.data.back().size == 0) view.data.pop_back();
    }
}

using update_times = std::vector<std::chrono::steady_clock::time_point>;

// Writes the rendered `events`, then counts the delivery of the updates they hold.
boost::asio::awaitable<bool> send_events(exchange& ex, std::string& events,
                                         update_times& updates_made_at) {
    if (events.empty()) co_return true;
    const bool sent = co_await ex.send_chunk(events);
    events.clear();
    for (const auto made_at : updates_made_at) http_metrics::get().record_live_delivery(made_at);
    updates_made_at.clear();
    co_return sent;
}

}  // namespace

boost::asio::awaitable<void> handle_sse(exchange& ex) {
    auto params = parse_read_params(ex);
    if (!params) {
        response res = ex.make_error(params.err());
        co_await ex.send(res);
        co_return;
    }
    const service::placement where = ex.placement();
    if (auto routed = route_elsewhere(ex, where, answered_by::replica)) {
        co_await ex.send(*routed);
        co_return;
    }
    service::read_request initial = make_read_request(ex, *params, params->start);
    // A follower's own apply wakes the reader from then on.
    initial.linearizable = catches_up_first(ex, where);
    service::stream_view view = co_await ex.service().read(initial);
    if (view.refusal) {
        response res = render_read_refusal(ex, *view.refusal, view.incarnation);
        co_await ex.send(res);
        co_return;
    }
    const representation rep = representation_for(view, ex.target().where);
    const bool base64 =
        rep == representation::bytes && !protocol::is_text_for_sse(view.content_type);
    // On a text SSE read a smaller max_bytes is raised to 4, so an event can
    // hold a whole UTF-8 character (extensions 9.3).
    if (!base64 && params->max_bytes_given && params->max_bytes < 4) {
        params->max_bytes = 4;
        const service::read_request wider = make_read_request(ex, *params, params->start);
        view = co_await ex.service().read(wider);
        if (view.refusal) {
            response res = ex.make_error(*view.refusal);
            co_await ex.send(res);
            co_return;
        }
    }
    const std::optional<admission::ticket> slot = co_await admit_live_reader(ex);
    if (!slot) co_return;
    const bool text_events = !base64 && rep != representation::json_array;
    if (text_events) end_on_character(view);
    const std::uint64_t incarnation = view.incarnation;

    response res = ex.make_response(http::status::ok);
    res.set(http::field::content_type, "text/event-stream");
    ex.set_cache_control(res, "no-cache");
    res.set(hdr::stream_incarnation, std::to_string(incarnation));
    if (base64) {
        res.set(hdr::stream_sse_data_encoding, "base64");
        res.set(hdr::stream_data_content_type, view.content_type);
    } else if (rep == representation::ndjson) {
        res.set(hdr::stream_data_content_type, "application/x-ndjson");
    }
    co_await ex.begin_stream(res);
    const metrics::gauge_hold streaming(http_metrics::get().sse_readers);

    // The connection closes after a bounded lifetime so that CDNs can collapse
    // readers (base protocol 10.2); the client reconnects from the last offset.
    const auto end_of_life = std::chrono::steady_clock::now() + ex.options().sse_lifetime;
    // A data event of an update shared by the stream's live readers is
    // rendered once for all of them; this reader's format is one slot of it.
    const std::size_t rendering = static_cast<std::size_t>(rep) + (base64 ? 3 : 0);
    const auto render = [rep, base64](const service::stream_view& v) {
        std::string event;
        append_data_event(event, v, rep, base64);
        return event;
    };
    // The control event after `v`. Its cursor is the same for every reader
    // at one time unless the client sent one of its own (base protocol
    // 10.1), so an update's is rendered once for the readers without one.
    const auto render_control = [&ex, &params](const service::stream_view& v) {
        protocol::control_event control;
        control.next_offset = v.next;
        control.up_to_date = v.up_to_date();
        control.closed = v.reached_closed_tail();
        if (!control.closed) control.cursor = live_cursor(ex, *params);
        std::string event;
        protocol::append_control_event(event, control);
        return event;
    };
    const bool own_cursor = protocol::honours_client_cursor(params->cursor);
    constexpr std::size_t control_slot = service::live_update::rendering_slots - 1;
    std::shared_ptr<const service::live_update> update;  // when set, the view to send
    // Registered with the stream's group once, while the reader keeps up.
    std::shared_ptr<service::live_subscription> following;
    // Events rendered and not yet written: the updates queued for a reader
    // that fell behind go out in one write, up to coalesced_bytes.
    std::string events;
    update_times unsent_updates;  // made_at of each
    bool first = true;
    while (true) {
        const service::stream_view& current = update ? update->view() : view;
        if (!current.data.empty()) {
            if (update) {
                events += update->rendering(rendering, render);
            } else {
                append_data_event(events, current, rep, base64);
            }
        }
        if (!current.data.empty() || first || current.reached_closed_tail()) {
            if (update && !own_cursor) {
                events += update->rendering(control_slot, render_control);
            } else {
                events += render_control(current);
            }
        }
        first = false;
        if (update) unsent_updates.push_back(update->made_at());
        const bool coalesce = update && following && following->has_queued() &&
                              !current.reached_closed_tail() && events.size() < coalesced_bytes;
        if (!coalesce && !co_await send_events(ex, events, unsent_updates)) co_return;
        // A server that stops ends the body after the events already read,
        // as at the end of the connection's lifetime.
        if (current.reached_closed_tail() || ex.service().live_reads_ended()) break;
        if (current.up_to_date() && std::chrono::steady_clock::now() >= end_of_life) break;
        // The read that follows `current` (which `update` may hold: its end
        // is kept before `update` moves on); a reader that keeps up with its
        // subscription needs none.
        const std::uint64_t read_from = current.next;
        const auto next_read = [&] {
            read_params again = *params;
            again.if_incarnation = incarnation;
            return make_read_request(
                ex, again, protocol::read_start{protocol::read_start::kind::position, read_from});
        };
        std::shared_ptr<const service::live_update> woken;
        if (current.up_to_date()) {
            if (!following) {
                const boost::asio::any_io_executor reader =
                    co_await boost::asio::this_coro::executor;
                const service::read_request next = next_read();
                following = ex.service().follow(next, reader, end_of_life);
            }
            woken = following->take_queued();
            if (!woken) woken = co_await following->next();
            if (!woken && following->ended()) following = nullptr;
        }
        update = std::move(woken);
        if (!update) {
            const service::read_request next = next_read();
            view = co_await ex.service().read(next);
            if (!view.refusal && text_events) end_on_character(view);
        }
        const std::optional<error>& refusal = update ? update->view().refusal : view.refusal;
        if (refusal) {
            // extensions 11: a live read that ends in error sends the error body as an event.
            const response err = ex.make_error(*refusal);
            protocol::append_sse_event(events, "error", err.body());
            break;
        }
    }
    if (!co_await send_events(ex, events, unsent_updates)) co_return;
    co_await ex.end_stream();
}

}  // namespace dstream::edge
