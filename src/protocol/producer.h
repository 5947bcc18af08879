#pragma once
// Idempotent producer rules (base protocol 5.2.1): a pure decision from the
// producer's recorded state and a write's (epoch, seq). The state machine
// applies the decision; nothing here reads a clock or stores anything.
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace dstream::protocol {

// Producer-Epoch and Producer-Seq are at most 2^53 - 1 (JavaScript numbers).
inline constexpr std::uint64_t max_producer_number = (std::uint64_t{1} << 53) - 1;

// What the server remembers of one producer of one stream.
struct producer_record {
    std::uint64_t epoch = 0;
    std::uint64_t last_seq = 0;
    // The byte range of the producer's newest applied write (its receipt).
    std::uint64_t last_start = 0;
    std::uint64_t last_end = 0;
};

enum class producer_verdict {
    apply,          // a new write: append it
    duplicate,      // seq at or below the last applied one: 204, nothing appended
    stale_epoch,    // 403 with the current epoch
    new_epoch_seq,  // a new epoch must start at seq 0: 400
    seq_gap,        // 409 with the expected and received seq
};

struct producer_decision {
    producer_verdict verdict = producer_verdict::apply;
    std::uint64_t expected_seq = 0;  // for seq_gap / new_epoch_seq
};

// `record` is null when the server holds no state for the producer.
producer_decision evaluate_producer(const producer_record* record, std::uint64_t epoch,
                                    std::uint64_t seq);

// Parses Producer-Epoch / Producer-Seq: a canonical decimal up to 2^53 - 1.
result<std::uint64_t> parse_producer_number(std::string_view text);

}  // namespace dstream::protocol
