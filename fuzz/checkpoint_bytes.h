#pragma once
// A checkpoint file's bytes as log/checkpoint_files writes them: the pieces
// of the image, then the CRC-32 of everything before it (docs/disk-format.md).
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <string_view>
#include <vector>
#include <zlib.h>

#include "fuzz_check.h"
#include "state/group_state.h"

namespace dstream::fuzz {

inline void append_crc32(std::string& bytes) {
    const auto crc = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                                      reinterpret_cast<const Bytef*>(bytes.data()),
                                                      static_cast<uInt>(bytes.size())));
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
}

inline std::string checkpoint_bytes(const state::checkpoint_image& image) {
    std::string bytes;
    for (const auto& piece : image.pieces) bytes.append(piece.data, piece.size);
    append_crc32(bytes);
    return bytes;
}

// A checkpoint's bytes in a canonical order: its streams sorted, each
// stream's forks and producers sorted, as byte strings; the CRC trailer left
// out (it depends on that order). `unique`: no two streams of one kind (live
// or retired) share a key, no two producers of a stream an id, no two forks a
// reference; a restore keeps only one of each.
struct canonical_checkpoint {
    std::string bytes;
    bool unique = true;
    bool operator==(const canonical_checkpoint&) const = default;
};

// Reads a "DSTRCKP3" checkpoint after the grammar of docs/disk-format.md,
// written apart from state/checkpoint.cc. The state keeps streams and
// producers in hash maps and forks in a map ordered by reference, whose order
// need not be the file's; every other byte must survive a restore and a
// capture as it is. Nothing when the bytes do not follow the grammar (a flag
// or an opt's present byte must be 0 or 1).
class canonical_checkpoint_reader {
public:
    explicit canonical_checkpoint_reader(std::string_view bytes) : _in(bytes) {}

    std::optional<canonical_checkpoint> read() {
        // An older version restores but is captured as today's: it has no
        // field-for-field counterpart to compare.
        if (_in.size() < 12 || _in.substr(0, 8) != "DSTRCKP3") return std::nullopt;
        _at = 8;
        std::uint64_t count = 0;
        // group, index, history_id, applied_now_ms
        if (!skip(4 + 8 + 8 + 8) || !u64(count)) return std::nullopt;
        std::string out(_in.substr(0, _at));
        std::vector<std::string> streams;
        for (std::uint64_t i = 0; i < count; ++i) {
            std::string s;
            if (!stream(s)) return std::nullopt;
            streams.push_back(std::move(s));
        }
        if (!skip(4) || _at != _in.size()) return std::nullopt;  // crc32, then nothing
        std::sort(streams.begin(), streams.end());
        for (const auto& s : streams) out += s;
        return canonical_checkpoint{std::move(out), _unique};
    }

private:
    bool skip(std::size_t n) {
        if (_in.size() - _at < n) return false;
        _at += n;
        return true;
    }
    bool u8(std::uint8_t& v) {
        if (_at >= _in.size()) return false;
        v = static_cast<std::uint8_t>(_in[_at++]);
        return true;
    }
    bool u64(std::uint64_t& v) {
        if (_in.size() - _at < 8) return false;
        v = 0;
        for (int i = 0; i < 8; ++i) {
            v |= static_cast<std::uint64_t>(static_cast<unsigned char>(_in[_at + i])) << (8 * i);
        }
        _at += 8;
        return true;
    }
    bool string(std::string_view* read = nullptr) {
        if (_in.size() - _at < 4) return false;
        std::uint64_t n = 0;
        for (int i = 0; i < 4; ++i) {
            n |= static_cast<std::uint64_t>(static_cast<unsigned char>(_in[_at + i])) << (8 * i);
        }
        _at += 4;
        if (read != nullptr && _in.size() - _at >= n) *read = _in.substr(_at, n);
        return skip(n);
    }
    bool flag(std::uint8_t* read = nullptr) {
        std::uint8_t v = 0;
        if (!u8(v) || v > 1) return false;
        if (read != nullptr) *read = v;
        return true;
    }
    // opt<T> := u8 present(0|1) [T], T read by `body`.
    template <typename F>
    bool optional(F body) {
        std::uint8_t present = 0;
        if (!u8(present) || present > 1) return false;
        return present == 0 || body();
    }
    bool opt_u64() {
        return optional([this] { return skip(8); });
    }

    bool stream(std::string& out) {
        const std::size_t start = _at;
        // key, retired, origin, forks
        std::string_view key;
        std::uint8_t retired = 0;
        if (!string(&key) || !flag(&retired) ||
            !optional([this] { return string() && skip(8 + 8 + 8); })) {
            return false;
        }
        if (!_keys.emplace(retired, key).second) _unique = false;
        std::uint64_t forks = 0;
        if (!u64(forks)) return false;
        out.assign(_in.substr(start, _at - start));
        std::vector<std::string> fork_records;
        std::set<std::string_view> references;
        for (std::uint64_t f = 0; f < forks; ++f) {
            const std::size_t from = _at;
            if (!skip(8) || !string()) return false;
            if (!references.insert(_in.substr(from, 8)).second) _unique = false;
            fork_records.emplace_back(_in.substr(from, _at - from));
        }
        std::sort(fork_records.begin(), fork_records.end());
        for (const auto& r : fork_records) out += r;
        const std::size_t after_forks = _at;
        // content_type, ttl, expires_at_ms, incarnation, created_at_ms,
        // last_write_ms, closed, last_stream_seq, previous_incarnation,
        // inherited_offset, retained, snapshot, epoch_floor
        if (!string() || !opt_u64() || !opt_u64() || !skip(8 + 8 + 8) || !flag() ||
            !optional([this] { return string(); }) || !opt_u64() || !skip(8 + 8) ||
            !optional([this] { return skip(8) && string() && skip(32 + 8) && string() && string(); }) ||
            !opt_u64()) {
            return false;
        }
        std::uint64_t producers = 0;
        if (!u64(producers)) return false;
        out.append(_in.substr(after_forks, _at - after_forks));
        std::vector<std::string> records;
        std::set<std::string_view> ids;
        for (std::uint64_t p = 0; p < producers; ++p) {
            const std::size_t from = _at;
            // producer_id, epoch, last_seq, last_start, last_end, last_closed,
            // last_identity, claim_identity, closed_epoch, closed_seq,
            // last_write_ms, above_floor, closed_by_history
            std::string_view id;
            if (!string(&id) || !skip(8 * 4) || !flag() ||
                !optional([this] { return skip(32); }) || !optional([this] { return skip(32); }) ||
                !opt_u64() || !skip(8 + 8) || !flag() || !flag()) {
                return false;
            }
            if (!ids.insert(id).second) _unique = false;
            records.emplace_back(_in.substr(from, _at - from));
        }
        std::sort(records.begin(), records.end());
        for (const auto& r : records) out += r;
        const std::size_t rest = _at;
        std::uint64_t chunks = 0;
        if (!u64(chunks)) return false;
        for (std::uint64_t c = 0; c < chunks; ++c) {
            if (!skip(8 + 8) || !string()) return false;
        }
        std::uint64_t hot_length = 0;
        if (!skip(8) || !u64(hot_length) || !skip(hot_length)) return false;
        out.append(_in.substr(rest, _at - rest));
        return true;
    }

    std::string_view _in;
    std::size_t _at = 0;
    bool _unique = true;
    std::set<std::pair<std::uint8_t, std::string_view>> _keys;
};

inline std::optional<canonical_checkpoint> read_canonical(std::string_view bytes) {
    return canonical_checkpoint_reader(bytes).read();
}

// Restores `bytes`, captures the restored state and restores that again: the
// capture must follow docs/disk-format.md, hold the bytes of the input when
// the input follows it too (and names each stream, producer and fork once),
// load with the same group, index and streams, and capture again as the same
// bytes (in the canonical order): no field lost, changed or invented on the
// way. False when `bytes` do not load at all.
inline bool check_checkpoint_round_trip(std::string_view bytes) {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    auto restored = state::group_state::restore_checkpoint(bytes, group, index);
    if (!restored) return false;
    const std::string first = checkpoint_bytes(restored->capture_checkpoint(group, index));
    const std::optional<canonical_checkpoint> first_canonical = read_canonical(first);
    check(first_canonical.has_value(), "a captured checkpoint follows docs/disk-format.md");
    check(first_canonical->unique, "a captured checkpoint names each stream, producer and fork once");
    if (const auto input = read_canonical(bytes); input && input->unique) {
        check(input->bytes == first_canonical->bytes,
              "a checkpoint restores and captures every field as it was");
    }
    std::uint32_t group2 = 0;
    std::uint64_t index2 = 0;
    auto again = state::group_state::restore_checkpoint(first, group2, index2);
    check(again.ok(), "a captured checkpoint restores");
    check(group2 == group && index2 == index, "a checkpoint keeps its group and index");
    check(again->stream_count() == restored->stream_count(), "a checkpoint keeps its streams");
    const std::string second = checkpoint_bytes(again->capture_checkpoint(group, index));
    // Captures are canonical (streams and producers in key order): the
    // second is the first, byte for byte.
    check(second == first, "a checkpoint of a restored checkpoint is the same bytes");
    return true;
}

}  // namespace dstream::fuzz
