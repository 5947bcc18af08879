#pragma once
// Commands of a group's state machine. Everything apply needs that is not in
// the state (the time, random ids) travels inside the command, so that every
// replica computes the same outcome. Commands have stable type codes and a
// versioned binary encoding: the same bytes go to the local WAL and, later,
// into Raft entries (see docs/disk-format.md).
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "base/binary.h"
#include "base/result.h"
#include "protocol/expiry.h"
#include "protocol/producer.h"
#include "state/fork_origin.h"

namespace dstream::state {

// Idempotent-producer headers of a write (base protocol 5.2.1).
struct producer_key {
    std::string id;
    std::uint64_t epoch = 0;
    std::uint64_t seq = 0;
    protocol::write_identity identity;  // Producer-Digest, when sent (extensions 5.2)
    bool operator==(const producer_key&) const = default;
};

// Draws the group's history id (extensions 2.4), once, at the group's creation.
struct init_group {
    std::uint64_t history_id = 0;
};

struct create_stream {
    std::string key;
    std::string content_type;
    protocol::expiry_config expiry;
    bool closed = false;
    std::string body;  // already normalized for JSON streams
    std::optional<std::uint64_t> if_incarnation;
    // A fork (base protocol 4.2): resolved by the engine before it proposes,
    // after its source holds a reference to it (add_fork_ref).
    std::optional<fork_origin> fork;
};

struct append {
    std::string key;
    std::string content_type;  // empty when the request named none
    std::string body;          // already normalized for JSON streams
    bool close = false;
    std::optional<std::string> stream_seq;
    std::optional<producer_key> producer;
    std::optional<std::uint64_t> if_incarnation;
    // A content fault found before proposing (bad JSON, empty body, ...). For a
    // producer write it is decided only after the producer rules (extensions
    // 5.3, step 5), so a repeat still gets its receipt.
    std::optional<error> content_fault;
};

struct delete_stream {
    std::string key;
    std::optional<std::uint64_t> if_incarnation;
};

// Proposed by the node that saw the stream's lifetime run out; applies only
// to the incarnation it names, so a late expiry never removes a recreated stream.
struct expire_stream {
    std::string key;
    std::uint64_t incarnation = 0;
};

// Records that [start, end) of the stream's bytes now live in the cold-tier
// object `object_key`, written (durably) before this command was proposed;
// apply trims the hot tail. Applies only to the named incarnation and only at
// the stream's current cold frontier, so a late or repeated flush is a no-op.
struct flush_chunk {
    std::string key;
    std::uint64_t incarnation = 0;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::string object_key;
};

// extensions 2.2, Ursula's note: the byte before a JSON snapshot or retention
// offset as the proposer read it, for apply to use when that byte is only in
// the cold tier (apply reads no cold bytes). It holds for that incarnation only.
struct boundary_check {
    std::uint64_t incarnation = 0;
    bool message_end = false;  // the byte is the LF that ends a message
    bool operator==(const boundary_check&) const = default;
};

// extensions 2.2: publish the snapshot of [-1, offset). The body is inline,
// or (1 MiB and more with a cold store) an object written before proposing.
struct publish_snapshot {
    std::string key;
    std::optional<std::uint64_t> if_incarnation;
    std::uint64_t offset = 0;
    std::string content_type;
    protocol::body_digest digest{};
    std::uint64_t size = 0;
    std::string body;        // inline body, empty when object_key is set
    std::string object_key;  // cold-tier object holding the body
    std::optional<boundary_check> boundary;
};

// extensions 2.2 Retention: drop everything below `offset`.
struct retain {
    std::string key;
    std::optional<std::uint64_t> if_incarnation;
    std::uint64_t offset = 0;
    std::optional<boundary_check> boundary;
};

// base protocol 4.2: the source `key` of `incarnation` keeps its bytes for
// the fork `fork_key` under `reference` until a drop_fork_ref names it.
// Proposed to the source's group before the fork is created in its own.
struct add_fork_ref {
    std::string key;
    std::uint64_t incarnation = 0;
    std::uint64_t offset = 0;  // the fork point, at most the source's tail
    std::string fork_key;
    std::uint64_t reference = 0;
};

// The fork holding `reference` is gone, or was never created: a retired
// source is collected once no reference remains.
struct drop_fork_ref {
    std::string key;
    std::uint64_t incarnation = 0;
    std::uint64_t reference = 0;
};

// extensions 2.4: an operator's acceptance of the loss of acknowledged
// writes starts a new history from what the group holds; the proposer draws
// the new history id.
struct rewrite_history {
    std::uint64_t history_id = 0;
};

// extensions 2.4: an operator's restore rewinds every stream of the group to
// its state in a backup, as one history rewrite. `image` is the group's
// sealed checkpoint image in the backup (docs/disk-format.md, Checkpoints);
// the cold objects it references are in the node's store before this is
// proposed. The proposer derives `history_id` from the backup's id, so every
// attempt of one restore proposes the same one, and a group already in that
// history ignores it (extensions 2.4 note: one history id per backup,
// whatever the number of attempts).
struct restore_group {
    std::uint64_t history_id = 0;
    std::string backup_id;
    std::string image;
};

using command_body =
    std::variant<init_group, create_stream, append, delete_stream, expire_stream, flush_chunk,
                 publish_snapshot, retain, rewrite_history, add_fork_ref, drop_fork_ref,
                 restore_group>;

struct command {
    protocol::unix_ms now_ms = 0;  // the proposer's clock
    command_body body;
};

// Stable type codes: never renumber, only add.
enum class command_type : std::uint8_t {
    init_group = 1,
    create_stream = 2,
    append = 3,
    delete_stream = 4,
    expire_stream = 5,
    flush_chunk = 6,
    publish_snapshot = 7,
    retain = 8,
    rewrite_history = 9,
    add_fork_ref = 10,
    drop_fork_ref = 11,
    restore_group = 12,
};

// The key of the stream a command addresses; null for group-wide commands.
const std::string* command_key(const command_body& body);
// The same key, to take from a command that is done with.
std::string* command_key(command_body& body);

std::string encode_command(const command& cmd);
// The same for a command made at `now_ms` of `body`, without moving the body into one.
std::string encode_command(protocol::unix_ms now_ms, const command_body& body);

// A write identity's encoding, shared with checkpoints.
void put_identity(binary_writer& w, const protocol::write_identity& id);
bool get_identity(binary_reader& r, protocol::write_identity& id);
result<command> decode_command(std::string_view bytes);

}  // namespace dstream::state
