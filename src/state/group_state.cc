#include "state/group_state.h"

#include <algorithm>
#include <unordered_set>

#include "protocol/content_type.h"
#include "protocol/digest.h"

namespace dstream::state {
namespace {

using protocol::error_code;

std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

apply_result refused(error_code code, std::string message) {
    apply_result r;
    r.refusal = make_error(code, std::move(message));
    return r;
}

// What an append's answer says of its stream: its incarnation, tail and
// closure. No more: an append is the hot path, and a content type copied
// there was an allocation each.
void describe_tail(apply_result& r, const stream& s) {
    r.incarnation = s.incarnation;
    r.next_offset = s.tail();
    r.closed = s.closed;
}

// ... and what the other answers say too: its content type, expiry, origin.
void describe(apply_result& r, const stream& s) {
    describe_tail(r, s);
    r.content_type = s.content_type;
    r.expiry = s.expiry;
    r.origin = s.origin;
}

apply_result incarnation_mismatch(const stream& s) {
    apply_result r =
        refused(error_code::incarnation_mismatch, "Stream-Incarnation does not match the stream");
    describe(r, s);
    return r;
}

// The cold objects a stream holds, all garbage once it is gone.
void collect_objects(const stream& s, std::vector<std::string>& out) {
    for (const auto& c : s.chunks) out.push_back(c.object_key);
    if (s.snapshot && !s.snapshot->object_key.empty()) out.push_back(s.snapshot->object_key);
}

// extensions 2.1: for a JSON stream, snapshot and retention offsets must be
// message boundaries: the stream's first offset, or an offset after an LF.
// A byte below the cold frontier is judged by what the proposer read of it,
// even when this replica still holds it in memory: which hot blocks a trim
// keeps depends on the stream's block history (a restored checkpoint holds
// its hot tail from the frontier on), and apply must not.
std::optional<error> check_json_boundary(const stream& s, std::uint64_t offset,
                                         const std::optional<boundary_check>& read) {
    if (!s.json || offset == 0 || offset == s.retained) return std::nullopt;
    bool message_end = false;
    if (offset - 1 >= s.cold_end()) {
        message_end = s.bytes.byte_at(offset - 1) == '\n';
    } else if (read && read->incarnation == s.incarnation) {
        message_end = read->message_end;
    } else {
        return make_error(error_code::json_boundary_unverified,
                          "the server could not verify that the offset is a message boundary");
    }
    if (!message_end)
        return make_error(error_code::not_json_boundary,
                          "the offset is not a JSON message boundary");
    return std::nullopt;
}

// A group's streams in key order: a rewrite's report must be a function of
// the state alone, never of the map's insertion history.
std::vector<std::pair<std::string_view, stream*>> in_key_order(
    const string_map<std::unique_ptr<stream>>& streams) {
    std::vector<std::pair<std::string_view, stream*>> out;
    out.reserve(streams.size());
    for (const auto& [key, s] : streams) out.emplace_back(key, s.get());
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

void name_snapshot(apply_result& r, const snapshot_ref& snap) {
    r.snapshot_offset = snap.offset;
    r.snapshot_digest = protocol::to_hex(snap.digest);
}

// The 403 answers of the producer rules (extensions 5.3).
struct producer_fence {
    error_code code;
    const char* message;
    const char* outcome;
};

const producer_fence& fence_for(protocol::producer_verdict v) {
    static const producer_fence key_conflict{
        error_code::producer_key_conflict, "this producer key holds a write with another identity",
        "key-conflict"};
    static const producer_fence closed{error_code::producer_epoch_closed,
                                       "a claim of a later epoch closed this producer epoch",
                                       "epoch-closed;by=claim"};
    static const producer_fence stale{error_code::producer_epoch_stale,
                                      "producer epoch is older than the current one",
                                      "stale-epoch"};
    static const producer_fence history{
        error_code::producer_epoch_closed,
        "a rewrite of the stream's history closed this producer epoch", "epoch-closed;by=history"};
    static const producer_fence expired{error_code::producer_expired,
                                        "the server may have forgotten this producer epoch",
                                        "producer-expired"};
    switch (v) {
        case protocol::producer_verdict::key_conflict:
            return key_conflict;
        case protocol::producer_verdict::epoch_closed_by_claim:
            return closed;
        case protocol::producer_verdict::epoch_closed_by_history:
            return history;
        case protocol::producer_verdict::producer_expired:
            return expired;
        default:
            return stale;
    }
}

}  // namespace

std::uint64_t incarnation_token(std::uint64_t history_id, protocol::unix_ms created_at_ms,
                                std::uint64_t log_index) {
    constexpr std::uint64_t low = std::uint64_t{1} << 52;
    const std::uint64_t h =
        mix64(history_id ^ mix64(static_cast<std::uint64_t>(created_at_ms) ^ mix64(log_index)));
    return low | (h & (low - 1));
}

const stream* group_state::find(std::string_view key) const {
    auto it = _streams.find(key);
    return it == _streams.end() ? nullptr : it->second.get();
}

const stream* group_state::find_any(std::string_view key) const {
    if (const stream* s = find(key)) return s;
    auto it = _retired.find(key);
    return it == _retired.end() ? nullptr : it->second.get();
}

const stream* group_state::find_source(std::string_view key, std::uint64_t named) const {
    const stream* s = find_any(key);
    return s != nullptr && (s->incarnation == named || s->forks.contains(named)) ? s : nullptr;
}

apply_result group_state::absent(std::string_view key) const {
    if (retired(key)) {
        return refused(error_code::stream_gone, "the stream was deleted; its forks still read it");
    }
    return refused(error_code::stream_not_found, "stream not found");
}

stream* group_state::find_mutable(std::string_view key) {
    auto it = _streams.find(key);
    return it == _streams.end() ? nullptr : it->second.get();
}

apply_result group_state::apply(command&& cmd, std::uint64_t log_index) {
    // Every command moves applied time, refused or not: it is part of the
    // state, a function of the log alone.
    _applied_now = std::max(_applied_now, cmd.now_ms);
    const protocol::unix_ms now = _applied_now;
    return std::visit(
        [&](auto& body) -> apply_result {
            using T = std::decay_t<decltype(body)>;
            if constexpr (std::is_same_v<T, init_group>) {
                return apply_init(body);
            } else if constexpr (std::is_same_v<T, create_stream>) {
                return apply_create(body, now, log_index);
            } else if constexpr (std::is_same_v<T, append>) {
                return apply_append(body, now);
            } else if constexpr (std::is_same_v<T, delete_stream>) {
                return apply_delete(body);
            } else if constexpr (std::is_same_v<T, expire_stream>) {
                return apply_expire(body);
            } else if constexpr (std::is_same_v<T, flush_chunk>) {
                return apply_flush(body);
            } else if constexpr (std::is_same_v<T, publish_snapshot>) {
                return apply_publish(body);
            } else if constexpr (std::is_same_v<T, retain>) {
                return apply_retain(body);
            } else if constexpr (std::is_same_v<T, add_fork_ref>) {
                return apply_add_fork_ref(body);
            } else if constexpr (std::is_same_v<T, drop_fork_ref>) {
                return apply_drop_fork_ref(body);
            } else if constexpr (std::is_same_v<T, restore_group>) {
                return apply_restore(body);
            } else {
                return apply_rewrite(body);
            }
        },
        cmd.body);
}

apply_result group_state::apply_init(const init_group& c) {
    // The history id is drawn once; a repeated init (two proposals racing at
    // first start) keeps the first.
    if (_history_id == 0) _history_id = c.history_id;
    return {};
}

apply_result group_state::apply_create(create_stream& c, protocol::unix_ms now,
                                       std::uint64_t index) {
    if (retired(c.key)) {
        return refused(error_code::stream_soft_deleted,
                       "a deleted stream that forks still read holds this URL");
    }
    if (stream* existing = find_mutable(c.key)) {
        if (c.if_incarnation && *c.if_incarnation != existing->incarnation) {
            return incarnation_mismatch(*existing);
        }
        const bool same = protocol::same_media_type(existing->content_type, c.content_type) &&
                          existing->expiry == c.expiry && existing->closed == c.closed &&
                          existing->origin.has_value() == c.fork.has_value() &&
                          (!c.fork || existing->origin->same_point(*c.fork));
        if (!same) {
            apply_result r = refused(error_code::stream_already_exists_conflict,
                                     "stream exists with a different configuration");
            describe(r, *existing);
            return r;
        }
        apply_result r;
        r.kind = write_kind::already_exists;
        describe(r, *existing);
        return r;
    }
    if (c.if_incarnation) {
        return refused(error_code::incarnation_mismatch,
                       "Stream-Incarnation names a stream that does not exist");
    }
    auto s = std::make_unique<stream>();
    s->content_type = c.content_type;
    s->json = protocol::is_json_media_type(c.content_type);
    s->expiry = c.expiry;
    s->created_at_ms = now;
    s->last_write_ms = now;
    s->incarnation = incarnation_token(_history_id, now, index);
    if (c.fork) {
        // Fresh writer state: no producers or Stream-Seq come from the source.
        s->origin = c.fork;
        s->bytes = storage::hot_bytes(c.fork->offset);
    }
    s->bytes.append_owned(std::move(c.body));
    s->closed = c.closed;
    apply_result r;
    r.kind = write_kind::created;
    r.wakes_readers = true;
    describe(r, *s);
    _streams.emplace(c.key, std::move(s));
    return r;
}

apply_result group_state::apply_append(append& c, protocol::unix_ms now) {
    // Every return is of `r`, so that the answer is built where the caller
    // keeps it: it is large, and a move of it takes some 200 instructions.
    apply_result r;
    stream* s = find_mutable(c.key);
    if (s == nullptr) {
        r = absent(c.key);
        return r;
    }
    if (c.if_incarnation && *c.if_incarnation != s->incarnation) {
        r = incarnation_mismatch(*s);
        return r;
    }
    describe_tail(r, *s);
    r.producer_write = c.producer.has_value();
    const bool close_only = c.close && c.body.empty() && !c.content_fault;

    // Producer rules come before the stream's closure and the content (extensions 5.3).
    const protocol::producer_record* record = nullptr;
    protocol::producer_write write;
    if (c.producer) {
        write = protocol::producer_write{c.producer->epoch, c.producer->seq, c.producer->identity,
                                         c.if_incarnation.has_value(), c.close};
        auto it = s->producers.find(c.producer->id);
        // Step 2: state idle for too long is dropped, raising the epoch floor.
        if (it != s->producers.end() &&
            protocol::ms_between(it->second.last_write_ms, now) > protocol::producer_idle_ms) {
            drop_producer(*s, it);
            it = s->producers.end();
        }
        record = it == s->producers.end() ? nullptr : &it->second;
        const auto d = protocol::evaluate_producer(record, s->epoch_floor, write);
        if (d.verdict != protocol::producer_verdict::apply) {
            answer_producer_decision(record, d, c, r);
            return r;
        }
        r.closed_epoch = d.closed_epoch;
        r.closed_seq = d.closed_seq;
        if (record == nullptr && s->producers.size() >= protocol::max_producers_per_stream &&
            !make_room_for_producer(*s, now)) {
            r.refusal = make_error(error_code::producer_limit,
                                   "the stream holds the most producers it keeps; retry later");
            return r;
        }
    }

    if (s->closed) {
        if (close_only) {
            // Closing a closed stream is idempotent (base protocol 5.2); a
            // producer's close still counts as its write, at the tail.
            r.kind = write_kind::appended;
            r.start_offset = s->tail();
            if (c.producer)
                record_producer_write(*s, *c.producer, record, write, s->tail(), now, r);
            return r;
        }
        r.refusal = make_error(error_code::stream_closed, "stream is closed");
        return r;
    }
    if (c.content_fault) {
        r.refusal = c.content_fault;
        return r;
    }
    if (!c.body.empty() && !protocol::same_media_type(c.content_type, s->content_type)) {
        r.refusal = make_error(error_code::content_type_mismatch,
                               "Content-Type does not match the stream's content type");
        return r;
    }
    if (c.stream_seq) {
        if (s->last_stream_seq && *c.stream_seq <= *s->last_stream_seq) {
            r.refusal = make_error(error_code::stream_seq_conflict,
                                   "Stream-Seq is not greater than the last accepted one");
            r.last_stream_seq = s->last_stream_seq;
            return r;
        }
        s->last_stream_seq = c.stream_seq;
    }

    r.start_offset = s->tail();
    s->bytes.append_owned(std::move(c.body));
    s->last_write_ms = now;
    if (c.close) s->closed = true;
    if (c.producer) record_producer_write(*s, *c.producer, record, write, r.start_offset, now, r);
    r.kind = write_kind::appended;
    r.next_offset = s->tail();
    r.closed = s->closed;
    r.wakes_readers = true;
    return r;
}

void group_state::answer_producer_decision(const protocol::producer_record* record,
                                           const protocol::producer_decision& d, const append& c,
                                           apply_result& r) {
    r.closed_epoch = d.closed_epoch;
    r.closed_seq = d.closed_seq;
    switch (d.verdict) {
        case protocol::producer_verdict::apply:
            return;
        case protocol::producer_verdict::repeat:
            r.kind = write_kind::repeated;
            r.producer_epoch = record->epoch;
            r.producer_seq = record->last_seq;
            r.start_offset = record->last_start;
            r.next_offset = record->last_end;
            r.closed = record->last_closed;
            return;
        case protocol::producer_verdict::repeat_evicted:
            r.kind = write_kind::repeated;
            r.producer_epoch = record->epoch;
            r.producer_seq = record->last_seq;
            r.receipt_evicted = true;
            r.start_offset = r.next_offset = 0;  // no range: it is not kept
            r.closed = false;
            return;
        case protocol::producer_verdict::key_conflict:
        case protocol::producer_verdict::epoch_closed_by_claim:
        case protocol::producer_verdict::epoch_closed_by_history:
        case protocol::producer_verdict::stale_epoch:
        case protocol::producer_verdict::producer_expired: {
            // Every producer 403 carries Producer-Epoch and one Producer-Outcome.
            const producer_fence& fence = fence_for(d.verdict);
            r.refusal = make_error(fence.code, fence.message);
            r.producer_epoch = d.answer_epoch;
            r.producer_outcome = fence.outcome;
            return;
        }
        case protocol::producer_verdict::new_epoch_seq:
            r.refusal = make_error(error_code::invalid_producer,
                                   "a new producer epoch must start at Producer-Seq 0");
            r.expected_seq = 0;
            return;
        case protocol::producer_verdict::seq_gap:
            r.refusal = make_error(error_code::producer_seq_conflict,
                                   "Producer-Seq is not the next expected sequence number");
            r.expected_seq = d.expected_seq;
            r.received_seq = c.producer->seq;
            return;
    }
}

std::optional<apply_result> group_state::answer_from_headers(const append& c,
                                                             protocol::unix_ms now) const {
    const stream* s = find(c.key);
    if (s == nullptr || !c.producer || !c.if_incarnation || *c.if_incarnation != s->incarnation) {
        return std::nullopt;
    }
    auto it = s->producers.find(c.producer->id);
    if (it == s->producers.end() ||
        protocol::ms_between(it->second.last_write_ms, now) > protocol::producer_idle_ms) {
        return std::nullopt;
    }
    const protocol::producer_write write{c.producer->epoch, c.producer->seq, c.producer->identity,
                                         true, c.close};
    const auto d = protocol::evaluate_producer(&it->second, s->epoch_floor, write);
    if (d.verdict != protocol::producer_verdict::repeat &&
        d.verdict != protocol::producer_verdict::repeat_evicted &&
        d.verdict != protocol::producer_verdict::key_conflict) {
        return std::nullopt;
    }
    apply_result r;
    describe(r, *s);
    r.producer_write = true;
    answer_producer_decision(&it->second, d, c, r);
    return r;
}

void group_state::drop_producer(
    stream& s, std::unordered_map<std::string, protocol::producer_record>::iterator it) {
    s.epoch_floor = std::max(s.epoch_floor.value_or(0), it->second.epoch);
    s.producers.erase(it);
}

bool group_state::make_room_for_producer(stream& s, protocol::unix_ms now) {
    // Drop the longest-idle producer, if it has been idle long enough. Among
    // producers idle equally long the smallest id goes: the map's iteration
    // order depends on its insertion history, which differs between a replica
    // that applied every write and one restored from a checkpoint.
    auto oldest = s.producers.end();
    for (auto it = s.producers.begin(); it != s.producers.end(); ++it) {
        if (oldest == s.producers.end() ||
            it->second.last_write_ms < oldest->second.last_write_ms ||
            (it->second.last_write_ms == oldest->second.last_write_ms &&
             it->first < oldest->first)) {
            oldest = it;
        }
    }
    if (oldest == s.producers.end() ||
        protocol::ms_between(oldest->second.last_write_ms, now) < protocol::producer_min_keep_ms) {
        return false;
    }
    drop_producer(s, oldest);
    return true;
}

void group_state::record_producer_write(stream& s, const producer_key& key,
                                        const protocol::producer_record* record,
                                        const protocol::producer_write& write, std::uint64_t start,
                                        protocol::unix_ms now, apply_result& r) {
    const protocol::producer_record next =
        protocol::record_applied(record, s.epoch_floor, write, start, s.tail(), now);
    const bool claim = record == nullptr || write.epoch > record->epoch;
    s.producers[key.id] = next;
    r.producer_epoch = next.epoch;
    r.producer_seq = next.last_seq;
    r.start_offset = start;
    r.next_offset = s.tail();
    if (claim) {
        r.closed_epoch = next.closed_epoch;
        r.closed_seq = next.closed_seq;
    }
}

apply_result group_state::apply_delete(const delete_stream& c) {
    auto it = _streams.find(c.key);
    if (it == _streams.end()) return absent(c.key);
    if (c.if_incarnation && *c.if_incarnation != it->second->incarnation) {
        return incarnation_mismatch(*it->second);
    }
    apply_result r;
    r.incarnation = it->second->incarnation;  // the stream deleted
    remove_stream(it, r);
    r.kind = write_kind::deleted;
    r.wakes_readers = true;
    return r;
}

apply_result group_state::apply_flush(const flush_chunk& c) {
    stream* s = find_mutable(c.key);
    if (s == nullptr || s->incarnation != c.incarnation || c.start != s->cold_end() ||
        c.end <= c.start || c.end > s->tail()) {
        return refused(error_code::invalid_request, "stale chunk flush");
    }
    s->chunks.push_back(chunk_ref{c.start, c.end, c.object_key});
    s->bytes.trim_before(c.end);
    return {};
}

apply_result group_state::apply_publish(const publish_snapshot& c) {
    stream* s = find_mutable(c.key);
    if (s == nullptr) {
        apply_result r = absent(c.key);
        if (!c.object_key.empty()) r.garbage_objects.push_back(c.object_key);
        return r;
    }
    if (c.if_incarnation && *c.if_incarnation != s->incarnation) return incarnation_mismatch(*s);
    apply_result r;
    describe(r, *s);
    r.retained_offset = s->retained;
    // A single-request publish below the retained offset answers 410 before
    // any comparison with the latest snapshot (extensions 2.2).
    if (c.offset < s->retained) {
        r.refusal =
            make_error(error_code::stream_gone, "the snapshot offset is below the retained offset");
        if (!c.object_key.empty()) r.garbage_objects.push_back(c.object_key);
        return r;
    }
    if (s->snapshot) {
        const bool same_key = c.offset == s->snapshot->offset;
        if (same_key && c.digest == s->snapshot->digest) {
            name_snapshot(r, *s->snapshot);  // an idempotent repeat
            if (!c.object_key.empty() && c.object_key != s->snapshot->object_key) {
                r.garbage_objects.push_back(c.object_key);
            }
            return r;
        }
        if (same_key || c.offset < s->snapshot->offset) {
            r.refusal = make_error(error_code::snapshot_conflict, "another snapshot is the latest");
            name_snapshot(r, *s->snapshot);
            if (!c.object_key.empty()) r.garbage_objects.push_back(c.object_key);
            return r;
        }
    }
    const auto refuse = [&](error e) {
        r.refusal = std::move(e);
        if (!c.object_key.empty()) r.garbage_objects.push_back(c.object_key);
        return r;
    };
    if (c.offset > s->tail()) {
        return refuse(
            make_error(error_code::snapshot_conflict, "the snapshot offset is beyond the tail"));
    }
    if (auto bad = check_json_boundary(*s, c.offset, c.boundary)) return refuse(std::move(*bad));
    if (s->snapshot && !s->snapshot->object_key.empty()) {
        r.garbage_objects.push_back(s->snapshot->object_key);
    }
    s->snapshot = snapshot_ref{c.offset, c.content_type, c.digest, c.size, c.body, c.object_key};
    name_snapshot(r, *s->snapshot);
    return r;
}

apply_result group_state::apply_rewrite(const rewrite_history& c) {
    // extensions 2.4: a new history id gives every stream of the group a new
    // token, reports the old one with the tail it kept, and closes every
    // producer epoch claimed before the rewrite.
    if (c.history_id == 0 || c.history_id == _history_id) {
        return refused(error_code::invalid_request, "a history rewrite needs a new history id");
    }
    _history_id = c.history_id;
    apply_result r;
    for (const auto& [key, entry] : in_key_order(_streams)) {
        stream& s = *entry;
        const std::uint64_t before = s.incarnation;
        rewrite_stream(s, incarnation_token(_history_id, s.created_at_ms, s.incarnation));
        r.rewritten.push_back(
            rewritten_stream{std::string(key), before, s.incarnation, s.previous_incarnation,
                             s.inherited_offset, s.tail()});
    }
    r.rewrote_history = true;
    r.wakes_readers = true;
    return r;
}

apply_result group_state::apply_restore(const restore_group& c) {
    apply_result r;
    if (c.history_id == _history_id) {
        // Another attempt of a restore this group applied already.
        r.already_restored = true;
        return r;
    }
    if (c.history_id == 0) {
        return refused(error_code::invalid_request, "a restore needs a new history id");
    }
    std::uint32_t group = 0;
    std::uint64_t backup_index = 0;
    auto restored = restore_checkpoint(c.image, group, backup_index);
    if (!restored) {
        return refused(error_code::invalid_request, "the backup's image of the group is unreadable");
    }
    group_state& b = *restored;
    // The objects only the state replaced references are garbage; those
    // both reference stay (the restore put the backup's copies in place
    // under the same keys: one key, one content).
    std::unordered_set<std::string> kept;
    std::vector<std::string> mine;
    // In key order: the garbage list is part of the answer, which must be a
    // function of the state alone, never of the maps' insertion history.
    const auto held_by = [](const string_map<std::unique_ptr<stream>>& streams,
                            std::vector<std::string>& out) {
        for (const auto& [key, s] : in_key_order(streams)) collect_objects(*s, out);
    };
    {
        std::vector<std::string> theirs;
        held_by(b._streams, theirs);
        held_by(b._retired, theirs);
        kept.insert(theirs.begin(), theirs.end());
    }
    held_by(_streams, mine);
    held_by(_retired, mine);
    for (auto& object : mine) {
        if (!kept.contains(object)) r.garbage_objects.push_back(std::move(object));
    }
    // Streams created after the backup go; the rest are rewritten as the
    // backup holds them. The token mixes in the history replaced: a restore
    // of the same backup after a later rewrite (whose history id is the same
    // one) issues no token a client saw before, and every attempt of one
    // restore issues the same tokens.
    const std::uint64_t replaced_history = _history_id;
    for (const auto& [key, entry] : in_key_order(_streams)) {
        if (!b._streams.contains(key)) {
            r.rewritten.push_back(rewritten_stream{std::string(key), entry->incarnation,
                                                   std::nullopt, std::nullopt, 0, 0});
        }
    }
    for (const auto& [key, entry] : in_key_order(b._streams)) {
        stream& s = *entry;
        std::optional<std::uint64_t> before;
        if (const stream* now = find(key)) before = now->incarnation;
        rewrite_stream(s, incarnation_token(c.history_id, s.created_at_ms,
                                            s.incarnation ^ mix64(replaced_history)));
        r.rewritten.push_back(rewritten_stream{std::string(key), before, s.incarnation,
                                               s.previous_incarnation, s.inherited_offset,
                                               s.tail()});
    }
    std::sort(r.rewritten.begin(), r.rewritten.end(),
              [](const rewritten_stream& x, const rewritten_stream& y) { return x.key < y.key; });
    _streams = std::move(b._streams);
    _retired = std::move(b._retired);
    _history_id = c.history_id;
    r.rewrote_history = true;
    r.wakes_readers = true;
    return r;
}

void group_state::detach_hot_tails(const tail_namer& name, std::vector<detached_tail>& out) {
    const auto detach = [&](const string_map<std::unique_ptr<stream>>& streams) {
        for (const auto& [key, entry] : in_key_order(streams)) {
            stream& s = *entry;
            const std::uint64_t start = s.cold_end();
            const std::uint64_t end = s.tail();
            if (end <= start) continue;
            detached_tail tail{name(key, s, start, end), {}};
            s.bytes.read(start, end - start, tail.bytes);
            s.chunks.push_back(chunk_ref{start, end, tail.object_key});
            s.bytes.trim_before(end);
            out.push_back(std::move(tail));
        }
    };
    detach(_streams);
    detach(_retired);
}

void group_state::rewrite_stream(stream& s, std::uint64_t token) {
    // After two rewrites with no write between them, the report names the
    // token before both: no byte changed in between (extensions 2.4).
    const bool written_since = !s.previous_incarnation || s.tail() != s.inherited_offset;
    if (written_since) {
        s.previous_incarnation = s.incarnation;
        s.inherited_offset = s.tail();
    }
    s.incarnation = token;
    for (auto& [id, p] : s.producers) p.closed_by_history = true;
}

apply_result group_state::apply_retain(const retain& c) {
    stream* s = find_mutable(c.key);
    if (s == nullptr) return absent(c.key);
    if (c.if_incarnation && *c.if_incarnation != s->incarnation) return incarnation_mismatch(*s);
    apply_result r;
    describe(r, *s);
    if (c.offset > s->tail()) {
        r.refusal =
            make_error(error_code::invalid_retention, "the retention offset is beyond the tail");
        return r;
    }
    if (c.offset > s->retained) {
        if (!s->snapshot || c.offset > s->snapshot->offset) {
            r.refusal = make_error(error_code::invalid_retention,
                                   "the retention offset is newer than the latest snapshot");
            return r;
        }
        // The snapshot's offset was verified as a boundary when it was published.
        if (c.offset != s->snapshot->offset) {
            if (auto bad = check_json_boundary(*s, c.offset, c.boundary)) {
                r.refusal = std::move(*bad);
                return r;
            }
        }
        s->retained = c.offset;
        // Chunks wholly below the retained offset are garbage; one that
        // straddles it stays, and reads start inside it.
        auto keep = std::find_if(s->chunks.begin(), s->chunks.end(),
                                 [&](const chunk_ref& ch) { return ch.end > c.offset; });
        for (auto it = s->chunks.begin(); it != keep; ++it)
            r.garbage_objects.push_back(it->object_key);
        s->chunks.erase(s->chunks.begin(), keep);
        s->bytes.trim_before(std::min(c.offset, s->cold_end()));
    }
    r.retained_offset = s->retained;
    return r;
}

apply_result group_state::apply_expire(const expire_stream& c) {
    auto it = _streams.find(c.key);
    if (it == _streams.end() || it->second->incarnation != c.incarnation) return {};
    apply_result r;
    r.incarnation = it->second->incarnation;  // the stream deleted
    remove_stream(it, r);
    r.wakes_readers = true;
    return r;
}

void group_state::collect(const stream& s, apply_result& r) {
    collect_objects(s, r.garbage_objects);
    if (s.origin) r.released = s.origin;
}

void group_state::remove_stream(string_map<std::unique_ptr<stream>>::iterator it, apply_result& r) {
    if (it->second->forks.empty()) {
        collect(*it->second, r);
    } else {
        _retired.emplace(it->first, std::move(it->second));
    }
    _streams.erase(it);
}

apply_result group_state::apply_add_fork_ref(const add_fork_ref& c) {
    stream* s = find_mutable(c.key);
    if (s == nullptr && retired(c.key)) {
        return refused(error_code::stream_soft_deleted, "the fork's source was deleted");
    }
    if (s == nullptr || s->incarnation != c.incarnation) {
        return refused(error_code::stream_not_found, "the fork's source does not exist");
    }
    if (c.offset > s->tail()) {
        return refused(error_code::invalid_offset, "the fork offset is beyond the source's tail");
    }
    s->forks.emplace(c.reference, c.fork_key);
    apply_result r;
    describe(r, *s);
    return r;
}

apply_result group_state::apply_drop_fork_ref(const drop_fork_ref& c) {
    // By the reference, which names one fork of one incarnation of the
    // source whatever its token is now (a history rewrite changes it).
    apply_result r;
    if (stream* s = find_mutable(c.key); s != nullptr && s->forks.contains(c.reference)) {
        s->forks.erase(c.reference);
        return r;
    }
    auto it = _retired.find(c.key);
    if (it == _retired.end() || !it->second->forks.contains(c.reference)) return r;
    it->second->forks.erase(c.reference);
    if (it->second->forks.empty()) {
        // The last fork is gone: collect the retired source, and on up its chain.
        collect(*it->second, r);
        _retired.erase(it);
    }
    return r;
}

}  // namespace dstream::state
