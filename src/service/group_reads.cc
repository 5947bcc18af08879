#include "service/group_reads.h"

#include <algorithm>

#include "protocol/digest.h"

namespace dstream::service {
namespace {

using protocol::error_code;

}  // namespace

group_reads::group_reads(const state::group_state& state, const runtime::clock& clock,
                         expired_handler expired)
    : _state(state), _clock(clock), _expired(std::move(expired)) {}

void group_reads::renew_all(protocol::unix_ms now) {
    _state.for_each_stream([&](const std::string& key, const state::stream& s) {
        if (s.expiry.ttl_seconds) _last_read_ms[key] = now;
    });
}

std::vector<std::pair<std::string, std::uint64_t>> group_reads::expired_streams(
    protocol::unix_ms now) const {
    std::vector<std::pair<std::string, std::uint64_t>> due;
    _state.for_each_stream([&](const std::string& key, const state::stream& s) {
        if (lifetime_over(key, s, now)) due.emplace_back(key, s.incarnation);
    });
    return due;
}

bool group_reads::lifetime_over(const std::string& key, const state::stream& s,
                          protocol::unix_ms now) const {
    if (s.expiry.expires_at) return now >= *s.expiry.expires_at;
    if (s.expiry.ttl_seconds) {
        protocol::unix_ms last = s.last_write_ms;
        if (auto it = _last_read_ms.find(key); it != _last_read_ms.end()) {
            last = std::max(last, it->second);
        }
        return now >= last + static_cast<protocol::unix_ms>(*s.expiry.ttl_seconds) * 1000;
    }
    return false;
}

const state::stream* group_reads::live_stream(const std::string& key, protocol::unix_ms now) {
    const state::stream* s = _state.find(key);
    if (s == nullptr || !lifetime_over(key, *s, now)) return s;
    if (_expired) _expired(key, s->incarnation);
    return nullptr;
}

bool group_reads::expiry_unknown_here(const std::string& key) const {
    if (_leads) return false;
    const state::stream* s = _state.find(key);
    return s != nullptr && !s->expiry.expires_at && s->expiry.ttl_seconds.has_value();
}

error group_reads::missing(const std::string& key) const {
    if (expiry_unknown_here(key)) {
        return make_error(error_code::no_leader,
                          "only the group's leader knows every read that renewed this stream");
    }
    if (_state.retired(key)) {
        return make_error(error_code::stream_gone,
                          "the stream was deleted; its forks still read it");
    }
    return make_error(error_code::stream_not_found, "stream not found");
}

result<fork_source_view> group_reads::fork_source(const std::string& key) {
    const state::stream* s = live_stream(key, _clock.wall_ms());
    if (s == nullptr) {
        if (expiry_unknown_here(key)) return missing(key);
        if (_state.retired(key)) {
            return make_error(error_code::stream_soft_deleted, "the fork's source was deleted");
        }
        return make_error(error_code::stream_not_found, "the fork's source does not exist");
    }
    return fork_source_view{s->incarnation, s->content_type, s->json, s->expiry, s->tail()};
}

std::shared_ptr<const live_update> group_reads::live_answer(const read_request& request) {
    read_plan plan = read(request);
    const stream_view& view = plan.view;
    if (!plan.cold.empty() || plan.inherited || (!view.refusal && view.next != view.tail)) {
        return nullptr;
    }
    return std::make_shared<const live_update>(std::move(plan.view));
}

bool group_reads::has_news(const read_request& request) {
    const state::stream* s = live_stream(request.key, _clock.wall_ms());
    return s == nullptr || s->incarnation != request.if_incarnation || s->closed ||
           s->tail() > request.start.position;
}

std::optional<state::apply_result> group_reads::answer_before_body(const state::append& headers) {
    const auto now = _clock.wall_ms();
    if (live_stream(headers.key, now) == nullptr) return std::nullopt;
    return _state.answer_from_headers(headers, now);
}

namespace {

byte_slice owned_slice(std::string bytes) {
    auto owned = std::make_shared<std::string>(std::move(bytes));
    const char* data = owned->data();
    const std::size_t size = owned->size();
    return byte_slice{std::move(owned), data, size};
}

}  // namespace

snapshot_view group_reads::read_snapshot(const std::string& key, std::uint64_t offset,
                                   std::uint64_t first, std::uint64_t length,
                                   std::string& object_key) {
    snapshot_view view;
    const state::stream* s = live_stream(key, _clock.wall_ms());
    if (s == nullptr) {
        view.refusal = missing(key);
        return view;
    }
    view.incarnation = s->incarnation;
    view.tail = s->tail();
    if (!s->snapshot || s->snapshot->offset != offset) {
        view.refusal =
            make_error(error_code::snapshot_not_found, "no latest snapshot at this offset");
        return view;
    }
    const state::snapshot_ref& snap = *s->snapshot;
    view.offset = snap.offset;
    view.content_type = snap.content_type;
    view.digest = protocol::to_hex(snap.digest);
    view.size = snap.size;
    view.first = std::min(first, snap.size);
    view.length = std::min(length, snap.size - view.first);
    if (view.length == 0) return view;
    if (snap.object_key.empty()) {
        view.body.push_back(owned_slice(snap.inline_body.substr(view.first, view.length)));
    } else {
        object_key = snap.object_key;
    }
    return view;
}

bootstrap_view group_reads::bootstrap(const std::string& key, std::uint64_t max_update_bytes,
                                std::string& snapshot_object_key) {
    bootstrap_view view;
    const state::stream* s = live_stream(key, _clock.wall_ms());
    if (s == nullptr) {
        view.refusal = missing(key);
        return view;
    }
    view.incarnation = s->incarnation;
    view.content_type = s->content_type;
    view.json = s->json;
    view.tail = s->tail();
    view.start = s->retained;
    if (s->snapshot) {
        view.has_snapshot = true;
        view.start = s->snapshot->offset;
        view.snapshot =
            read_snapshot(key, s->snapshot->offset, 0, s->snapshot->size, snapshot_object_key);
    }
    view.next = view.start;
    // Updates come only from the hot tail (extensions 3.2 note): otherwise the
    // answer is partial at the snapshot point and the client reads on.
    if (view.start < s->bytes.begin_offset() || view.start == s->tail()) return view;
    std::uint64_t end = std::min(s->tail(), view.start + max_update_bytes);
    if (s->json && end < s->tail()) {
        // Whole messages only, and at least one even when it alone passes the cap.
        std::uint64_t e = end;
        while (e > view.start && s->bytes.byte_at(e - 1) != '\n') --e;
        if (e == view.start) {
            e = end;
            while (e < s->tail() && s->bytes.byte_at(e - 1) != '\n') ++e;
        }
        end = e;
    } else if (!s->json && end < s->tail()) {
        return view;  // more than the cap: the snapshot part only
    }
    s->bytes.read(view.start, end - view.start, view.updates);
    view.next = end;
    return view;
}

read_plan group_reads::read(const read_request& request, std::optional<std::uint64_t> as_source_of) {
    read_plan plan;
    stream_view& view = plan.view;
    const auto now = _clock.wall_ms();
    const state::stream* s = as_source_of ? _state.find_source(request.key, *as_source_of)
                                          : live_stream(request.key, now);
    if (s == nullptr) {
        // A fork's source is kept while the fork exists; only retention can
        // have dropped the bytes it inherits.
        view.refusal = as_source_of
                           ? make_error(error_code::stream_gone, "the inherited bytes are gone")
                           : missing(request.key);
        return plan;
    }
    view.incarnation = s->incarnation;
    view.content_type = s->content_type;
    view.json = s->json;
    view.expiry = s->expiry;
    view.stream_closed = s->closed;
    view.tail = s->tail();
    view.retained = s->retained;
    view.previous_incarnation = s->previous_incarnation;
    view.inherited_offset = s->inherited_offset;
    if (s->snapshot) {
        view.snapshot_offset = s->snapshot->offset;
        view.snapshot_digest = protocol::to_hex(s->snapshot->digest);
    }

    std::uint64_t start = s->retained;
    switch (request.start.where) {
        case protocol::read_start::kind::beginning:
            // A read of the whole history cannot be served once retention
            // dropped its start (extensions 2.2): 410, and bootstrap recovers.
            if (s->retained > 0) {
                view.refusal = make_error(error_code::stream_gone,
                                          "the stream's beginning is no longer retained");
                return plan;
            }
            break;
        case protocol::read_start::kind::now:
            start = s->tail();
            break;
        case protocol::read_start::kind::position:
            start = request.start.position;
            if (start < s->retained) {
                view.refusal = make_error(error_code::stream_gone,
                                          "offset is below the earliest retained offset");
                return plan;
            }
            if (start > s->tail()) {
                view.refusal = make_error(error_code::offset_out_of_range,
                                          "offset is beyond the stream's tail");
                return plan;
            }
            break;
    }
    if (request.if_incarnation && *request.if_incarnation != s->incarnation) {
        view.refusal = make_error(error_code::incarnation_mismatch,
                                  "Stream-Incarnation does not match the stream");
        return plan;
    }
    if (request.renews_ttl && !as_source_of) _last_read_ms[request.key] = now;

    view.start = start;
    view.next = start;
    if (request.max_bytes == 0 || start == s->tail()) return plan;

    const std::uint64_t end = std::min(s->tail(), start + request.max_bytes);
    std::uint64_t at = start;
    if (at < s->own_start()) {
        // A fork's bytes below its fork point are its source's: no copy.
        at = std::min(end, s->own_start());
        plan.inherited = inherited_range{s->origin->source_key, s->origin->source_incarnation,
                                         s->origin->reference, start, at};
    }
    // Below the hot tail the bytes are in chunks: plan them, load them off the strand.
    if (at < end && at < s->bytes.begin_offset()) {
        auto chunk = std::upper_bound(
            s->chunks.begin(), s->chunks.end(), at,
            [](std::uint64_t o, const state::chunk_ref& c) { return o < c.start; });
        --chunk;
        for (; at < end && at < s->bytes.begin_offset(); ++chunk) {
            const std::uint64_t stop = std::min({end, chunk->end, s->bytes.begin_offset()});
            plan.cold.push_back(cold_piece{chunk->object_key, chunk->end - chunk->start,
                                           at - chunk->start, stop - at});
            at = stop;
        }
    }
    if (at < end) s->bytes.read(at, end - at, view.data);
    view.next = end;
    return plan;
}

}  // namespace dstream::service
