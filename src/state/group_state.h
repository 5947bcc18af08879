#pragma once
// The deterministic state machine of one group: the streams that hash to it.
// apply() reads no clock, draws no random number and does no I/O: the same
// commands in the same order give the same state and the same answers on
// every replica. It runs on the group's executor only.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/byte_slice.h"
#include "base/string_map.h"
#include "state/apply_result.h"
#include "state/command.h"
#include "state/stream.h"

namespace dstream::state {

// The bytes of a checkpoint: metadata pieces and hot-tail slices, in file
// order. Capturing one on the strand copies no stream bytes: the slices keep
// the immutable hot blocks alive while the file is written elsewhere.
struct checkpoint_image {
    std::vector<byte_slice> pieces;
};
// The image in one string with the CRC-32 trailer a checkpoint file ends
// with: what restore_checkpoint() reads.
std::string sealed_checkpoint_bytes(const checkpoint_image& image);

class group_state {
public:
    // Everything the state holds, as of the last applied command (`index`);
    // see docs/disk-format.md.
    checkpoint_image capture_checkpoint(std::uint32_t group, std::uint64_t index) const;
    // Rebuilds a state from a checkpoint file's bytes; sets `group` and `index`.
    static result<group_state> restore_checkpoint(std::string_view bytes, std::uint32_t& group,
                                                  std::uint64_t& index);

    // Not an apply: a restore's preparation by its proposer, on a state
    // restored from a backup's image. Moves every stream's hot tail into a
    // cold chunk that `name` names, handing its bytes to `out` (to be written
    // before the restore that references them is proposed: the two steps of
    // a flush), so that the image the restore carries holds references only
    // and stays small whatever the backup's hot tails held.
    struct detached_tail {
        std::string object_key;
        std::vector<byte_slice> bytes;
    };
    using tail_namer = std::function<std::string(std::string_view key, const stream& s,
                                                 std::uint64_t start, std::uint64_t end)>;
    void detach_hot_tails(const tail_namer& name, std::vector<detached_tail>& out);

    // `log_index` is the command's position in the group's log; it makes
    // incarnation tokens unique even for two creates in one millisecond.
    // The command applies at max(applied_now(), cmd.now_ms): a proposer's
    // clock may be behind an earlier one's (a new leader), applied time is not.
    // An applied write's bytes move out of `cmd` into the stream (a large
    // write's without a copy, storage::hot_bytes); the rest of it stays.
    apply_result apply(command&& cmd, std::uint64_t log_index);
    // The time the last command applied at (0 before any); kept in checkpoints.
    protocol::unix_ms applied_now() const { return _applied_now; }

    // A live stream: what every client request addresses.
    const stream* find(std::string_view key) const;
    // A live or a retired stream.
    const stream* find_any(std::string_view key) const;
    // A stream a fork reads through: live or retired, of that incarnation, or
    // holding the fork reference `named` (which a history rewrite keeps, where
    // it changes the token; references and tokens are drawn apart, 64 random
    // bits against a hash in [2^52, 2^53)).
    const stream* find_source(std::string_view key, std::uint64_t named) const;
    // A deleted stream kept for its forks (base protocol 4.2 soft delete):
    // 410 to every request on its URL, 409 to a create there.
    bool retired(std::string_view key) const { return _retired.contains(std::string(key)); }

    // extensions 5.5: the answer a producer write with Stream-Incarnation gets
    // from its headers alone, when it is a repeat or a key conflict; nothing
    // otherwise (the write must be read and proposed).
    std::optional<apply_result> answer_from_headers(const append& c, protocol::unix_ms now) const;
    std::uint64_t history_id() const { return _history_id; }
    std::size_t stream_count() const { return _streams.size(); }
    template <typename F>
    void for_each_stream(F&& f) const {
        for (const auto& [key, s] : _streams) f(key, *s);
    }
    template <typename F>
    void for_each_retired_stream(F&& f) const {
        for (const auto& [key, s] : _retired) f(key, *s);
    }

private:
    apply_result apply_init(const init_group& c);
    apply_result apply_create(create_stream& c, protocol::unix_ms now, std::uint64_t index);
    apply_result apply_append(append& c, protocol::unix_ms now);
    apply_result apply_delete(const delete_stream& c);
    apply_result apply_expire(const expire_stream& c);
    apply_result apply_flush(const flush_chunk& c);
    apply_result apply_publish(const publish_snapshot& c);
    apply_result apply_retain(const retain& c);
    apply_result apply_rewrite(const rewrite_history& c);
    apply_result apply_restore(const restore_group& c);
    apply_result apply_add_fork_ref(const add_fork_ref& c);
    apply_result apply_drop_fork_ref(const drop_fork_ref& c);
    // One stream's part of a history rewrite (extensions 2.4): its new token,
    // the report of the old one, and its producer epochs closed.
    static void rewrite_stream(stream& s, std::uint64_t token);
    // Removes a live stream (delete or expiry): retires it while forks read
    // through it, otherwise erases it and releases its own source.
    void remove_stream(string_map<std::unique_ptr<stream>>::iterator it, apply_result& r);
    // Erases a stream for good: its cold objects are garbage, and a fork
    // releases its reference on its source.
    static void collect(const stream& s, apply_result& r);
    // The refusal for a request on a stream that is not live: 410 when it is
    // retired, 404 when there is none.
    apply_result absent(std::string_view key) const;

    stream* find_mutable(std::string_view key);
    static void answer_producer_decision(const protocol::producer_record* record,
                                         const protocol::producer_decision& d, const append& c,
                                         apply_result& r);
    static void drop_producer(
        stream& s, std::unordered_map<std::string, protocol::producer_record>::iterator it);
    static bool make_room_for_producer(stream& s, protocol::unix_ms now);
    static void record_producer_write(stream& s, const producer_key& key,
                                      const protocol::producer_record* record,
                                      const protocol::producer_write& write, std::uint64_t start,
                                      protocol::unix_ms now, apply_result& r);

    std::uint64_t _history_id = 0;
    protocol::unix_ms _applied_now = 0;
    // unique_ptr: stream addresses stay stable while the map rehashes.
    string_map<std::unique_ptr<stream>> _streams;
    string_map<std::unique_ptr<stream>> _retired;
};

// The token of a stream created at `created_at_ms` by the command at
// `log_index` in a group with `history_id`: in [2^52, 2^53) (extensions 2.4).
std::uint64_t incarnation_token(std::uint64_t history_id, protocol::unix_ms created_at_ms,
                                std::uint64_t log_index);

}  // namespace dstream::state
