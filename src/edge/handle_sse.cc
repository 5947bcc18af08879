#include "edge/handle_sse.h"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/this_coro.hpp>

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
using update_ptr = std::shared_ptr<const service::live_update>;

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

// One reader's events: the data event in its format and the control event.
// An update's are rendered once for all of its stream's readers, in the
// update; the control event is the reader's own when it sent a cursor of
// its own, so that its cursor stays above the client's (base protocol 10.1).
class event_renderer {
public:
    event_renderer(const exchange& ex, const read_params& params, representation rep,
                   bool base64)
        : _ex(ex),
          _params(params),
          _rep(rep),
          _base64(base64),
          _format(static_cast<std::size_t>(rep) + (base64 ? 3 : 0)),
          _own_cursor(protocol::honours_client_cursor(params.cursor)) {}

    void append_data(std::string& out, const service::stream_view& v) const {
        append_data_event(out, v, _rep, _base64);
    }
    void append_control(std::string& out, const service::stream_view& v) const {
        protocol::control_event control;
        control.next_offset = v.next;
        control.up_to_date = v.up_to_date();
        control.closed = v.reached_closed_tail();
        if (!control.closed) control.cursor = live_cursor(_ex, _params);
        protocol::append_control_event(out, control);
    }
    const std::string& data(const service::live_update& u) const {
        return u.rendering(data_slot(), [this](const service::stream_view& v) {
            std::string event;
            append_data(event, v);
            return event;
        });
    }
    // Valid until the next call of control() or chunk().
    const std::string& control(const service::live_update& u) {
        if (!_own_cursor) return shared_control(u);
        _own.clear();
        append_control(_own, u.view());
        return _own;
    }
    // Both events as one HTTP/1.1 chunk; valid until the next call of
    // control() or chunk().
    const std::string& chunk(const service::live_update& u) {
        if (_own_cursor) {
            _own_chunk.clear();
            exchange::append_chunk(_own_chunk, data(u), control(u));
            return _own_chunk;
        }
        return u.rendering(chunk_slot(), [&](const service::stream_view&) {
            std::string framed;
            exchange::append_chunk(framed, data(u), shared_control(u));
            return framed;
        });
    }

private:
    // The update's slots: the data event in each of four formats, the
    // control event, and both as a chunk in each format.
    static constexpr std::size_t formats = 4;
    static_assert(service::live_update::rendering_slots == 2 * formats + 1);
    std::size_t data_slot() const { return _format; }
    static constexpr std::size_t control_slot = formats;
    std::size_t chunk_slot() const { return formats + 1 + _format; }
    const std::string& shared_control(const service::live_update& u) const {
        return u.rendering(control_slot, [this](const service::stream_view& v) {
            std::string event;
            append_control(event, v);
            return event;
        });
    }

    const exchange& _ex;
    const read_params& _params;
    const representation _rep;
    const bool _base64;
    const std::size_t _format;
    const bool _own_cursor;
    std::string _own;
    std::string _own_chunk;
};

// A parked SSE reader's updates written to its socket where they are
// offered, without resuming the reader: one write of a chunk rendered once
// for the stream's readers, as a bare send to each subscriber would be. An
// update the socket does not take whole is finished by the reader
// (finish()). Used only while the reader is parked, which it cannot leave
// meanwhile (live_subscription::offer), so nothing else touches the socket.
class direct_delivery final : public service::live_sink {
public:
    direct_delivery(exchange& ex, event_renderer& renderer, const std::string& unsent,
                    std::uint64_t& position)
        : _ex(ex),
          _writer(ex.writer_of_framed_chunks()),
          _renderer(renderer),
          _unsent(unsent),
          _position(position) {}

    taken take(const update_ptr& update) override {
        const service::stream_view& v = update->view();
        // The last update of a reader, and one that has nothing to send,
        // go to the reader, as do updates behind events it has not sent.
        if (v.refusal || v.reached_closed_tail() || v.data.empty() || !_unsent.empty())
            return taken::no;
        const std::string& chunk = _renderer.chunk(*update);
        const exchange::chunk_progress now = _writer.send_now(chunk);
        _position = v.next;
        if (now.done) {
            delivered(*update);
            return taken::whole;
        }
        _begun = update;
        _chunk = &chunk;
        _written = now.written;
        _failed = now.failed;
        return taken::part;
    }

    // Whether `update` is one take() began and the reader must finish.
    bool began(const update_ptr& update) const { return update && update == _begun; }
    // Finishes that update; false: the client is gone.
    boost::asio::awaitable<bool> finish() {
        const update_ptr update = std::move(_begun);
        if (_failed || !co_await _ex.send_framed_rest(*_chunk, _written)) co_return false;
        delivered(*update);
        co_return true;
    }

private:
    static void delivered(const service::live_update& update) {
        http_metrics::get().record_live_delivery(update.made_at());
        http_metrics::get().live_direct_deliveries.inc();
    }

    exchange& _ex;
    const exchange::framed_writer _writer;
    event_renderer& _renderer;
    const std::string& _unsent;
    std::uint64_t& _position;
    update_ptr _begun;
    const std::string* _chunk = nullptr;  // _begun's, or the renderer's own
    std::size_t _written = 0;
    bool _failed = false;
};

// What an SSE answer begins from, once its head is sent.
struct opened_events {
    read_params params;
    service::stream_view view;  // the first read's
    representation rep;
    bool base64;
    admission::ticket slot;  // the live reader's place

    // Events of text, which must end on whole UTF-8 characters.
    bool text_events() const { return !base64 && rep != representation::json_array; }
};

// The first read and the answer's head; nothing when a refusal was answered
// instead. A coroutine of its own, so that its frame is gone while the
// reader lasts, and what it gives is one pointer in the reader's frame.
boost::asio::awaitable<std::unique_ptr<opened_events>> open_events(exchange& ex,
                                                                   read_params params) {
    const service::placement where = ex.placement();
    if (auto routed = route_elsewhere(ex, where, answered_by::replica)) {
        co_await ex.send(*routed);
        co_return nullptr;
    }
    service::read_request initial = make_read_request(ex, params, params.start);
    // A follower's own apply wakes the reader from then on.
    initial.linearizable = catches_up_first(ex, where);
    service::stream_view view = co_await ex.service().read(initial);
    if (view.refusal) {
        response res = render_read_refusal(ex, *view.refusal, view.incarnation);
        co_await ex.send(res);
        co_return nullptr;
    }
    const representation rep = representation_for(view, ex.target().where);
    const bool base64 =
        rep == representation::bytes && !protocol::is_text_for_sse(view.content_type);
    // On a text SSE read a smaller max_bytes is raised to 4, so an event can
    // hold a whole UTF-8 character (extensions 9.3).
    if (!base64 && params.max_bytes_given && params.max_bytes < 4) {
        params.max_bytes = 4;
        const service::read_request wider = make_read_request(ex, params, params.start);
        view = co_await ex.service().read(wider);
        if (view.refusal) {
            response res = ex.make_error(*view.refusal);
            co_await ex.send(res);
            co_return nullptr;
        }
    }
    std::optional<admission::ticket> slot = co_await admit_live_reader(ex);
    if (!slot) co_return nullptr;
    auto opened = std::make_unique<opened_events>(
        opened_events{std::move(params), std::move(view), rep, base64, std::move(*slot)});
    if (opened->text_events()) end_on_character(opened->view);

    response res = ex.make_response(http::status::ok);
    res.set(http::field::content_type, "text/event-stream");
    ex.set_cache_control(res, "no-cache");
    res.set(hdr::stream_incarnation, std::to_string(opened->view.incarnation));
    if (base64) {
        res.set(hdr::stream_sse_data_encoding, "base64");
        res.set(hdr::stream_data_content_type, opened->view.content_type);
    } else if (rep == representation::ndjson) {
        res.set(hdr::stream_data_content_type, "application/x-ndjson");
    }
    co_await ex.begin_stream(res);
    co_return opened;
}

// The read that follows the events sent, from `position`, of the stream
// the answer began on (extensions 2.4).
service::read_request read_after(const exchange& ex, const read_params& params,
                                 std::uint64_t incarnation, std::uint64_t position) {
    read_params again = params;
    again.if_incarnation = incarnation;
    return make_read_request(ex, again,
                             protocol::read_start{protocol::read_start::kind::position, position});
}

// The helpers below are not part of the reader's coroutine, so that what
// they hold (a read request, a second view, an error answer) is not in its
// frame, which lasts as long as the reader.

// A catch-up read into `view`.
boost::asio::awaitable<void> read_into(exchange& ex, service::read_request request,
                                       service::stream_view& view, bool text_events) {
    view = co_await ex.service().read(request);
    if (!view.refusal && text_events) end_on_character(view);
}

std::shared_ptr<service::live_subscription> follow(exchange& ex, service::read_request request,
                                                   const boost::asio::any_io_executor& reader,
                                                   std::chrono::steady_clock::time_point until) {
    return ex.service().follow(request, reader, until);
}

// extensions 11: a live read that ends in error sends the error body as an event.
void append_error_event(std::string& events, const exchange& ex, const error& refusal) {
    const response err = ex.make_error(refusal);
    protocol::append_sse_event(events, "error", err.body());
}

}  // namespace

boost::asio::awaitable<void> handle_sse(exchange& ex, read_params p) {
    const std::unique_ptr<opened_events> opened = co_await open_events(ex, std::move(p));
    if (!opened) co_return;
    // Neither the head's fields nor the request's are needed from here on:
    // an idle reader then holds no field block.
    ex.keep_request_line_only();
    const metrics::gauge_hold streaming(http_metrics::get().sse_readers);
    const read_params& params = opened->params;
    service::stream_view& view = opened->view;
    const bool text_events = opened->text_events();
    const std::uint64_t incarnation = view.incarnation;

    // The connection closes after a bounded lifetime so that CDNs can collapse
    // readers (base protocol 10.2); the client reconnects from the last offset.
    const auto end_of_life = std::chrono::steady_clock::now() + ex.options().sse_lifetime;
    event_renderer renderer(ex, params, opened->rep, opened->base64);
    update_ptr update;  // when set, the view to send
    // Registered with the stream's group once, while the reader keeps up.
    std::shared_ptr<service::live_subscription> following;
    // Events rendered and not yet written: the updates queued for a reader
    // that fell behind go out in one write, up to coalesced_bytes.
    std::string events;
    update_times unsent_updates;  // made_at of each
    // Where the events sent end: the next read starts there.
    std::uint64_t position = view.next;
    std::optional<direct_delivery> direct;
    if (ex.writes_framed_chunks()) direct.emplace(ex, renderer, events, position);
    bool first = true;
    while (true) {
        const service::stream_view& current = update ? update->view() : view;
        if (!current.data.empty()) {
            if (update) {
                events += renderer.data(*update);
            } else {
                renderer.append_data(events, current);
            }
        }
        if (!current.data.empty() || first || current.reached_closed_tail()) {
            if (update) {
                events += renderer.control(*update);
            } else {
                renderer.append_control(events, current);
            }
        }
        first = false;
        position = current.next;
        if (update) unsent_updates.push_back(update->made_at());
        const bool coalesce = update && following && following->has_queued() &&
                              !current.reached_closed_tail() && events.size() < coalesced_bytes;
        if (!coalesce && !co_await send_events(ex, events, unsent_updates)) co_return;
        // A server that stops ends the body after the events already read,
        // as at the end of the connection's lifetime.
        if (current.reached_closed_tail() || ex.service().live_reads_ended()) break;
        if (current.up_to_date() && std::chrono::steady_clock::now() >= end_of_life) break;
        update_ptr woken;
        if (current.up_to_date()) {
            if (!following) {
                const boost::asio::any_io_executor reader =
                    co_await boost::asio::this_coro::executor;
                following =
                    follow(ex, read_after(ex, params, incarnation, position), reader, end_of_life);
                if (direct) following->set_sink(&*direct);
            }
            // Updates the sink delivered whole never wake the reader; one it
            // began is finished here before the reader waits on.
            while (true) {
                woken = following->take_queued();
                if (!woken) woken = co_await following->next();
                if (!direct || !direct->began(woken)) break;
                if (!co_await direct->finish()) co_return;
            }
            if (!woken && following->ended()) {
                following->set_sink(nullptr);
                following = nullptr;
            }
        }
        update = std::move(woken);
        // A reader that keeps up with its subscription reads nothing itself.
        if (!update) {
            co_await read_into(ex, read_after(ex, params, incarnation, position), view,
                               text_events);
        }
        const std::optional<error>& refusal = update ? update->view().refusal : view.refusal;
        if (refusal) {
            append_error_event(events, ex, *refusal);
            break;
        }
    }
    if (!co_await send_events(ex, events, unsent_updates)) co_return;
    co_await ex.end_stream();
}

}  // namespace dstream::edge
