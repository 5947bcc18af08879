#pragma once
// What applying one command decided: a refusal or the typed answer of the
// write. The edge renders it; the state machine never picks HTTP details.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "protocol/expiry.h"
#include "state/fork_origin.h"

namespace dstream::state {

enum class write_kind {
    none,            // a command without a client answer (init, expiry)
    created,         // 201
    already_exists,  // 200, same configuration
    appended,        // a new write
    repeated,        // a producer write that had applied before
    deleted,
};

// One stream as a history rewrite left it (extensions 2.4), for the
// operator's report of a restore or an accepted loss.
struct rewritten_stream {
    std::string key;
    // Its token on the node just before the rewrite; none for a stream the
    // restore brought back that the node no longer held.
    std::optional<std::uint64_t> before;
    // Its token now; none for a stream the restore removed (created after
    // the backup).
    std::optional<std::uint64_t> incarnation;
    // What HEAD reports (Stream-Previous-Incarnation, Stream-Inherited-Offset).
    std::optional<std::uint64_t> previous_incarnation;
    std::uint64_t inherited_offset = 0;
    std::uint64_t tail = 0;
    bool operator==(const rewritten_stream&) const = default;
};

struct apply_result {
    std::optional<error> refusal;
    write_kind kind = write_kind::none;
    bool producer_write = false;
    // A repeat of an older producer write whose range is no longer kept
    // (extensions 5.3: 204 with Producer-Outcome: receipt-evicted, no range).
    bool receipt_evicted = false;
    // Producer-Outcome of a producer 403 (extensions 5.3), e.g. "stale-epoch".
    std::string producer_outcome;
    // Producer-Closed-Epoch / -Seq.
    std::optional<std::uint64_t> closed_epoch;
    std::uint64_t closed_seq = 0;

    // The stream that answered; absent when there is none.
    std::optional<std::uint64_t> incarnation;
    std::string content_type;
    protocol::expiry_config expiry;
    std::uint64_t start_offset = 0;  // where the write's bytes start
    std::uint64_t next_offset = 0;   // the write's end, or the tail
    bool closed = false;

    // Producer answer headers (base protocol 5.2.1).
    std::optional<std::uint64_t> producer_epoch;
    std::optional<std::uint64_t> producer_seq;
    std::optional<std::uint64_t> expected_seq;
    std::optional<std::uint64_t> received_seq;
    // Stream-Last-Seq on a Stream-Seq conflict (extensions 5.8).
    std::optional<std::string> last_stream_seq;
    // The latest snapshot named by a publish answer (204 or 409), and the
    // retained offset of a retention answer (extensions 2.2).
    std::optional<std::uint64_t> snapshot_offset;
    std::string snapshot_digest;  // lowercase hex
    std::optional<std::uint64_t> retained_offset;
    // Cold-tier objects the command made garbage (chunks below retention,
    // a replaced snapshot, everything of a deleted stream).
    std::vector<std::string> garbage_objects;
    // The fork the answering stream is (base protocol 4.2), when it is one.
    std::optional<fork_origin> origin;
    // The origin of a fork this command removed for good: its source's
    // group must drop the reference.
    std::optional<fork_origin> released;
    // Whether the tail moved or the stream closed, disappeared or was replaced:
    // live readers of the stream must look again.
    bool wakes_readers = false;
    // A group command rewrote the group's history (extensions 2.4): every
    // stream may have changed, and `rewritten` reports each, in key order.
    bool rewrote_history = false;
    std::vector<rewritten_stream> rewritten;
    // A restore the group had applied already (one history id per backup):
    // it changed nothing.
    bool already_restored = false;
};

}  // namespace dstream::state
