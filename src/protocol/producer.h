#pragma once
// Idempotent producer rules: base protocol 5.2.1 and extensions 5 (write
// keys, write identity, typed answers, epoch floor). Pure decisions from a
// producer's recorded state and a write's headers; the state machine applies
// them. Nothing here reads a clock or stores anything.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "protocol/expiry.h"

namespace dstream::protocol {

// Producer-Epoch and Producer-Seq are at most 2^53 - 1 (JavaScript numbers).
inline constexpr std::uint64_t max_producer_number = (std::uint64_t{1} << 53) - 1;
// extensions 5.6 (Ursula): producer state is kept while the producer wrote
// within 7 days, and for at least 1 hour when a stream holds more than 4,096.
inline constexpr unix_ms producer_idle_ms = 7LL * 24 * 3600 * 1000;
inline constexpr unix_ms producer_min_keep_ms = 3600LL * 1000;
inline constexpr std::size_t max_producers_per_stream = 4096;

// BLAKE3-256 of a write's body: its identity (extensions 5.2).
using body_digest = std::array<std::uint8_t, 32>;

// A write's identity: its digest, or none. Two writes with one key are the
// same write only when both carry the same digest, or neither carries one.
using write_identity = std::optional<body_digest>;

// What the server remembers of one producer of one stream.
struct producer_record {
    std::uint64_t epoch = 0;
    std::uint64_t last_seq = 0;
    // The newest applied write: its range (the receipt) and identity.
    std::uint64_t last_start = 0;
    std::uint64_t last_end = 0;
    bool last_closed = false;  // the newest write closed the stream (its receipt says so)
    write_identity last_identity;
    // The claim (seq 0) of the current epoch, held while the epoch is current.
    write_identity claim_identity;
    // The epoch the current claim closed, and its highest applied seq; absent
    // when the claim reports no closure (extensions 5.3, 5.4).
    std::optional<std::uint64_t> closed_epoch;
    std::uint64_t closed_seq = 0;
    unix_ms last_write_ms = 0;
    // Opened above the stream's epoch floor (extensions 5.4): one byte.
    bool above_floor = true;
    // A history rewrite closed the current epoch at last_seq (extensions 2.4, 5.3).
    bool closed_by_history = false;
};

// The headers of one producer write.
struct producer_write {
    std::uint64_t epoch = 0;
    std::uint64_t seq = 0;
    write_identity identity;
    bool with_incarnation = false;  // the write carries Stream-Incarnation
    bool closes = false;            // Stream-Closed: true
};

enum class producer_verdict {
    apply,                  // a new write (a claim when seq is 0 and the epoch is new)
    repeat,                 // 204 with the write's receipt
    repeat_evicted,         // 204 with Producer-Outcome: receipt-evicted
    key_conflict,           // 403 key-conflict
    epoch_closed_by_claim,  // 403 epoch-closed;by=claim
    epoch_closed_by_history,  // 403 epoch-closed;by=history
    stale_epoch,            // 403 stale-epoch
    producer_expired,       // 403 producer-expired (the epoch floor)
    new_epoch_seq,          // 400: a newer epoch must start at seq 0
    seq_gap,                // 409: Producer-Expected-Seq / Producer-Received-Seq
};

struct producer_decision {
    producer_verdict verdict = producer_verdict::apply;
    std::uint64_t expected_seq = 0;   // seq_gap, new_epoch_seq
    std::uint64_t answer_epoch = 0;   // Producer-Epoch of a 403
    // Producer-Closed-Epoch / -Seq: on epoch_closed_by_claim, and on a claim
    // (new or repeated) that closed an earlier epoch.
    std::optional<std::uint64_t> closed_epoch;
    std::uint64_t closed_seq = 0;
};

// `record` is null when the server holds no state for the producer; `floor`
// is the stream's epoch floor, absent until some producer state was dropped.
producer_decision evaluate_producer(const producer_record* record,
                                    std::optional<std::uint64_t> floor, const producer_write& w);

// The record after `w` applied with bytes [start, end) at `now`; `record` is
// the previous state (null for a new producer). Returns the closure the claim
// reports, if any, in the decision's closed_* fields.
producer_record record_applied(const producer_record* record, std::optional<std::uint64_t> floor,
                               const producer_write& w, std::uint64_t start, std::uint64_t end,
                               unix_ms now);

// Parses Producer-Epoch / Producer-Seq: a canonical decimal up to 2^53 - 1.
result<std::uint64_t> parse_producer_number(std::string_view text);
// Parses Producer-Digest: 64 lowercase hexadecimal digits.
result<body_digest> parse_body_digest(std::string_view text);

}  // namespace dstream::protocol
