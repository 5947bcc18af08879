// Checkpoints of a group's state machine (docs/disk-format.md): what a Raft
// snapshot will be later. Metadata, producer state, references to cold
// chunks and the hot tails; never the cold bytes.
#include <algorithm>
#include <utility>
#include <vector>

#include "base/binary.h"
#include "base/crc32.h"
#include "protocol/content_type.h"
#include "state/group_state.h"

namespace dstream::state {
namespace {

// Version 3 added the applied time and a canonical order (streams by key,
// producers by id); version 2 added forks and retired streams. Version 1 and
// 2 files still load.
constexpr std::string_view checkpoint_magic_v1 = "DSTRCKP1";
constexpr std::string_view checkpoint_magic_v2 = "DSTRCKP2";
constexpr std::string_view checkpoint_magic = "DSTRCKP3";

byte_slice own(std::string bytes) {
    auto owned = std::make_shared<std::string>(std::move(bytes));
    const char* data = owned->data();
    const std::size_t size = owned->size();
    return byte_slice{std::move(owned), data, size};
}

void put_optional(binary_writer& w, const std::optional<std::uint64_t>& v) {
    w.put_u8(v ? 1 : 0);
    if (v) w.put_u64(*v);
}

bool get_optional(binary_reader& r, std::optional<std::uint64_t>& v) {
    std::uint8_t present = 0;
    if (!r.get_u8(present)) return false;
    if (present == 0) return true;
    std::uint64_t value = 0;
    if (!r.get_u64(value)) return false;
    v = value;
    return true;
}

// The entries of a hash map in key order: the order of a checkpoint's
// sections must be a function of the state alone, never of the map's
// insertion history (which differs between a replica that applied every
// command and one restored from a checkpoint).
template <typename Map>
std::vector<std::pair<std::string_view, const typename Map::mapped_type*>> in_key_order(
    const Map& map) {
    // Views and pointers side by side: the sort reads no map node.
    std::vector<std::pair<std::string_view, const typename Map::mapped_type*>> out;
    out.reserve(map.size());
    for (const auto& [key, value] : map) out.emplace_back(key, &value);
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

// A version 1 or 2 checkpoint holds no applied time: the latest time any of
// its streams or producers recorded stands in for it, a lower bound of the
// applied time of the state that wrote it.
protocol::unix_ms latest_recorded_time(const stream& s) {
    protocol::unix_ms latest = std::max(s.created_at_ms, s.last_write_ms);
    for (const auto& [id, p] : s.producers) latest = std::max(latest, p.last_write_ms);
    return latest;
}

}  // namespace

std::string sealed_checkpoint_bytes(const checkpoint_image& image) {
    std::string bytes;
    for (const auto& piece : image.pieces) bytes.append(piece.data, piece.size);
    const std::uint32_t crc = crc32_of(bytes);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    return bytes;
}

checkpoint_image group_state::capture_checkpoint(std::uint32_t group, std::uint64_t index) const {
    checkpoint_image image;
    binary_writer head;
    head.put_u32(group);
    head.put_u64(index);
    head.put_u64(_history_id);
    head.put_u64(static_cast<std::uint64_t>(_applied_now));
    head.put_u64(_streams.size() + _retired.size());
    image.pieces.push_back(own(std::string(checkpoint_magic) + std::move(head).take()));
    const auto capture = [&](std::string_view key, const stream* s, bool retired) {
        binary_writer w;
        w.put_string(key);
        w.put_u8(retired ? 1 : 0);
        w.put_u8(s->origin ? 1 : 0);
        if (s->origin) {
            w.put_string(s->origin->source_key);
            w.put_u64(s->origin->source_incarnation);
            w.put_u64(s->origin->offset);
            w.put_u64(s->origin->reference);
        }
        w.put_u64(s->forks.size());
        for (const auto& [reference, fork] : s->forks) {
            w.put_u64(reference);
            w.put_string(fork);
        }
        w.put_string(s->content_type);
        put_optional(w, s->expiry.ttl_seconds);
        std::optional<std::uint64_t> expires;
        if (s->expiry.expires_at) expires = static_cast<std::uint64_t>(*s->expiry.expires_at);
        put_optional(w, expires);
        w.put_u64(s->incarnation);
        w.put_u64(static_cast<std::uint64_t>(s->created_at_ms));
        w.put_u64(static_cast<std::uint64_t>(s->last_write_ms));
        w.put_u8(s->closed ? 1 : 0);
        w.put_u8(s->last_stream_seq ? 1 : 0);
        if (s->last_stream_seq) w.put_string(*s->last_stream_seq);
        put_optional(w, s->previous_incarnation);
        w.put_u64(s->inherited_offset);
        w.put_u64(s->retained);
        w.put_u8(s->snapshot ? 1 : 0);
        if (s->snapshot) {
            w.put_u64(s->snapshot->offset);
            w.put_string(s->snapshot->content_type);
            for (auto b : s->snapshot->digest) w.put_u8(b);
            w.put_u64(s->snapshot->size);
            w.put_string(s->snapshot->inline_body);
            w.put_string(s->snapshot->object_key);
        }
        put_optional(w, s->epoch_floor);
        w.put_u64(s->producers.size());
        for (const auto& [id, record] : in_key_order(s->producers)) {
            const protocol::producer_record& p = *record;
            w.put_string(id);
            w.put_u64(p.epoch);
            w.put_u64(p.last_seq);
            w.put_u64(p.last_start);
            w.put_u64(p.last_end);
            w.put_u8(p.last_closed ? 1 : 0);
            put_identity(w, p.last_identity);
            put_identity(w, p.claim_identity);
            put_optional(w, p.closed_epoch);
            w.put_u64(p.closed_seq);
            w.put_u64(static_cast<std::uint64_t>(p.last_write_ms));
            w.put_u8(p.above_floor ? 1 : 0);
            w.put_u8(p.closed_by_history ? 1 : 0);
        }
        w.put_u64(s->chunks.size());
        for (const auto& c : s->chunks) {
            w.put_u64(c.start);
            w.put_u64(c.end);
            w.put_string(c.object_key);
        }
        const std::uint64_t hot_start = s->cold_end();
        w.put_u64(hot_start);
        w.put_u64(s->tail() - hot_start);
        image.pieces.push_back(own(std::move(w).take()));
        s->bytes.read(hot_start, s->tail() - hot_start, image.pieces);
    };
    for (const auto& [key, s] : in_key_order(_streams)) capture(key, s->get(), false);
    for (const auto& [key, s] : in_key_order(_retired)) capture(key, s->get(), true);
    // The trailer's CRC is computed by the writer over every piece before it.
    return image;
}

result<group_state> group_state::restore_checkpoint(std::string_view bytes, std::uint32_t& group,
                                                    std::uint64_t& index) {
    const auto bad = [](const char* what) {
        return make_error(protocol::error_code::internal, std::string("checkpoint ") + what);
    };
    if (bytes.size() < checkpoint_magic.size() + 4) return bad("has a bad header");
    const std::string_view magic = bytes.substr(0, checkpoint_magic.size());
    if (magic != checkpoint_magic && magic != checkpoint_magic_v2 && magic != checkpoint_magic_v1)
        return bad("has a bad header");
    const bool v1 = magic == checkpoint_magic_v1;
    const bool timed = magic == checkpoint_magic;
    const std::string_view body = bytes.substr(0, bytes.size() - 4);
    binary_reader trailer(bytes.substr(bytes.size() - 4));
    std::uint32_t stored_crc = 0;
    trailer.get_u32(stored_crc);
    if (crc32_of(body) != stored_crc) return bad("fails its checksum");

    binary_reader r(body.substr(checkpoint_magic.size()));
    group_state state;
    std::uint64_t count = 0;
    std::uint64_t applied_now = 0;
    if (!r.get_u32(group) || !r.get_u64(index) || !r.get_u64(state._history_id) ||
        (timed && !r.get_u64(applied_now)) || !r.get_u64(count)) {
        return bad("is truncated");
    }
    state._applied_now = static_cast<protocol::unix_ms>(applied_now);
    for (std::uint64_t i = 0; i < count; ++i) {
        std::string key;
        auto s = std::make_unique<stream>();
        std::optional<std::uint64_t> expires;
        std::uint64_t created = 0, last_write = 0, producers = 0, chunks = 0, hot_start = 0,
                      hot_len = 0;
        std::uint8_t closed = 0, has_seq = 0, retired = 0, forked = 0;
        std::uint64_t forks = 0;
        if (!r.get_string(key)) return bad("is truncated");
        if (!v1) {
            if (!r.get_u8(retired) || !r.get_u8(forked)) return bad("is truncated");
            if (forked != 0) {
                s->origin.emplace();
                if (!r.get_string(s->origin->source_key) ||
                    !r.get_u64(s->origin->source_incarnation) || !r.get_u64(s->origin->offset) ||
                    !r.get_u64(s->origin->reference)) {
                    return bad("is truncated");
                }
            }
            if (!r.get_u64(forks)) return bad("is truncated");
            for (std::uint64_t f = 0; f < forks; ++f) {
                std::uint64_t reference = 0;
                std::string fork;
                if (!r.get_u64(reference) || !r.get_string(fork)) return bad("is truncated");
                s->forks.emplace(reference, std::move(fork));
            }
        }
        if (!r.get_string(s->content_type) || !get_optional(r, s->expiry.ttl_seconds) ||
            !get_optional(r, expires) || !r.get_u64(s->incarnation) || !r.get_u64(created) ||
            !r.get_u64(last_write) || !r.get_u8(closed) || !r.get_u8(has_seq)) {
            return bad("is truncated");
        }
        if (expires) s->expiry.expires_at = static_cast<protocol::unix_ms>(*expires);
        s->json = protocol::is_json_media_type(s->content_type);
        s->created_at_ms = static_cast<protocol::unix_ms>(created);
        s->last_write_ms = static_cast<protocol::unix_ms>(last_write);
        s->closed = closed != 0;
        if (has_seq != 0) {
            s->last_stream_seq.emplace();
            if (!r.get_string(*s->last_stream_seq)) return bad("is truncated");
        }
        std::uint8_t has_snapshot = 0;
        if (!get_optional(r, s->previous_incarnation) || !r.get_u64(s->inherited_offset) ||
            !r.get_u64(s->retained) || !r.get_u8(has_snapshot)) {
            return bad("is truncated");
        }
        if (has_snapshot != 0) {
            snapshot_ref snap;
            if (!r.get_u64(snap.offset) || !r.get_string(snap.content_type))
                return bad("is truncated");
            for (auto& b : snap.digest) {
                if (!r.get_u8(b)) return bad("is truncated");
            }
            if (!r.get_u64(snap.size) || !r.get_string(snap.inline_body) ||
                !r.get_string(snap.object_key)) {
                return bad("is truncated");
            }
            s->snapshot = std::move(snap);
        }
        if (!get_optional(r, s->epoch_floor) || !r.get_u64(producers)) return bad("is truncated");
        for (std::uint64_t p = 0; p < producers; ++p) {
            std::string id;
            protocol::producer_record rec;
            std::uint64_t producer_last_write = 0;
            std::uint8_t above = 0;
            std::uint8_t closed_it = 0;
            std::uint8_t by_history = 0;
            if (!r.get_string(id) || !r.get_u64(rec.epoch) || !r.get_u64(rec.last_seq) ||
                !r.get_u64(rec.last_start) || !r.get_u64(rec.last_end) || !r.get_u8(closed_it) ||
                !get_identity(r, rec.last_identity) || !get_identity(r, rec.claim_identity) ||
                !get_optional(r, rec.closed_epoch) || !r.get_u64(rec.closed_seq) ||
                !r.get_u64(producer_last_write) || !r.get_u8(above) || !r.get_u8(by_history)) {
                return bad("is truncated");
            }
            rec.last_write_ms = static_cast<protocol::unix_ms>(producer_last_write);
            rec.above_floor = above != 0;
            rec.last_closed = closed_it != 0;
            rec.closed_by_history = by_history != 0;
            s->producers.emplace(std::move(id), rec);
        }
        if (!r.get_u64(chunks)) return bad("is truncated");
        for (std::uint64_t c = 0; c < chunks; ++c) {
            chunk_ref ref;
            if (!r.get_u64(ref.start) || !r.get_u64(ref.end) || !r.get_string(ref.object_key)) {
                return bad("is truncated");
            }
            s->chunks.push_back(std::move(ref));
        }
        std::string hot;
        if (!r.get_u64(hot_start) || !r.get_u64(hot_len) || !r.get_bytes(hot_len, hot) ||
            hot_start != s->cold_end()) {
            return bad("is truncated");
        }
        s->bytes = storage::hot_bytes(hot_start);
        s->bytes.append(hot);
        if (!timed) state._applied_now = std::max(state._applied_now, latest_recorded_time(*s));
        (retired != 0 ? state._retired : state._streams).emplace(std::move(key), std::move(s));
    }
    if (!r.at_end()) return bad("has trailing bytes");
    return state;
}

}  // namespace dstream::state
