// The producer rules as a table of (recorded state, floor, write) -> answer:
// base protocol 5.2.1 and extensions 5.2-5.4, every Producer-Outcome value
// and the epoch floor.
#include "protocol/producer.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace dstream::protocol {
namespace {

const char* verdict_name(producer_verdict v) {
    switch (v) {
        case producer_verdict::apply: return "apply";
        case producer_verdict::repeat: return "repeat";
        case producer_verdict::repeat_evicted: return "repeat_evicted";
        case producer_verdict::key_conflict: return "key_conflict";
        case producer_verdict::epoch_closed_by_claim: return "epoch_closed_by_claim";
        case producer_verdict::epoch_closed_by_history: return "epoch_closed_by_history";
        case producer_verdict::stale_epoch: return "stale_epoch";
        case producer_verdict::producer_expired: return "producer_expired";
        case producer_verdict::new_epoch_seq: return "new_epoch_seq";
        case producer_verdict::seq_gap: return "seq_gap";
    }
    return "?";
}

body_digest digest_of(std::uint8_t fill) {
    body_digest d{};
    d.fill(fill);
    return d;
}
const write_identity none = std::nullopt;
const write_identity A = digest_of(0xaa);
const write_identity B = digest_of(0xbb);

// A record: current epoch, last seq, the newest write's identity, the claim's
// identity, the epoch its claim closed (and at which seq), above the floor.
producer_record rec(std::uint64_t epoch, std::uint64_t last_seq, write_identity last = none,
                    write_identity claim = none, std::optional<std::uint64_t> closed = std::nullopt,
                    std::uint64_t closed_seq = 0, bool above_floor = true) {
    producer_record r;
    r.epoch = epoch;
    r.last_seq = last_seq;
    r.last_start = 10;
    r.last_end = 20;
    r.last_identity = last;
    r.claim_identity = claim;
    r.closed_epoch = closed;
    r.closed_seq = closed_seq;
    r.above_floor = above_floor;
    return r;
}

producer_write write(std::uint64_t epoch, std::uint64_t seq, write_identity id = none,
                     bool with_incarnation = false) {
    return producer_write{epoch, seq, id, with_incarnation};
}

struct rule_row {
    const char* what;
    std::optional<producer_record> record;  // nullopt: the server holds no state
    std::optional<std::uint64_t> floor;
    producer_write w;
    producer_verdict verdict;
    std::uint64_t expected_seq = 0;                  // seq_gap, new_epoch_seq
    std::uint64_t answer_epoch = 0;                  // 403s
    std::optional<std::uint64_t> closed_epoch = {};  // Producer-Closed-Epoch
    std::uint64_t closed_seq = 0;
};

TEST(ProducerRules, DecisionTable) {
    using v = producer_verdict;
    const std::optional<std::uint64_t> no_floor;
    const rule_row rows[] = {
        // A producer the server does not know (base 5.2.1, extensions 5.3).
        {"new producer, seq 0: a claim", std::nullopt, no_floor, write(0, 0), v::apply},
        {"new producer at a later epoch, seq 0", std::nullopt, no_floor, write(7, 0), v::apply},
        {"new producer, seq 1: 409 expecting 0", std::nullopt, no_floor, write(0, 1), v::seq_gap, 0},
        {"new producer, seq 5 at epoch 3: 409 expecting 0", std::nullopt, no_floor, write(3, 5), v::seq_gap, 0},

        // The current epoch: next, gaps.
        {"next seq applies", rec(2, 5), no_floor, write(2, 6), v::apply},
        {"seq 1 after the claim applies", rec(0, 0), no_floor, write(0, 1), v::apply},
        {"gap of one: 409 expecting last+1", rec(2, 5), no_floor, write(2, 7), v::seq_gap, 6},
        {"big gap", rec(2, 5), no_floor, write(2, 1000), v::seq_gap, 6},

        // Repeats (extensions 5.2, 5.3): the key decides, the identity confirms.
        {"repeat of the newest write, no digests: receipt", rec(2, 5), no_floor, write(2, 5), v::repeat},
        {"repeat of the newest write, same digest: receipt", rec(2, 5, A), no_floor, write(2, 5, A), v::repeat},
        {"newest write, other digest: key-conflict", rec(2, 5, A), no_floor, write(2, 5, B), v::key_conflict, 0, 2},
        {"newest write had a digest, repeat has none: key-conflict", rec(2, 5, A), no_floor, write(2, 5), v::key_conflict, 0, 2},
        {"newest write had none, repeat has one: key-conflict", rec(2, 5), no_floor, write(2, 5, A), v::key_conflict, 0, 2},
        {"older write of the epoch: receipt-evicted", rec(2, 5), no_floor, write(2, 3, B), v::repeat_evicted},
        {"the claim repeated, same identity: receipt-evicted with the closure", rec(2, 5, none, A, 1, 9), no_floor,
         write(2, 0, A), v::repeat_evicted, 0, 0, 1, 9},
        {"the claim repeated with another identity: key-conflict", rec(2, 5, none, A), no_floor, write(2, 0, B),
         v::key_conflict, 0, 2},
        {"the claim is the newest write: receipt with the closure", rec(2, 0, A, A, 1, 4), no_floor, write(2, 0, A),
         v::repeat, 0, 0, 1, 4},

        // Older epochs: fenced (base 403), typed by what closed them.
        {"the epoch the current claim closed: epoch-closed;by=claim", rec(5, 3, none, none, 4, 8), no_floor,
         write(4, 2), v::epoch_closed_by_claim, 0, 5, 4, 8},
        {"closed epoch, seq above the closing seq: still epoch-closed", rec(5, 3, none, none, 4, 8), no_floor,
         write(4, 9), v::epoch_closed_by_claim, 0, 5, 4, 8},
        {"an even older epoch: stale-epoch", rec(5, 3, none, none, 4, 8), no_floor, write(3, 0), v::stale_epoch, 0, 5},
        {"older epoch, no closure recorded: stale-epoch", rec(5, 3), no_floor, write(4, 0), v::stale_epoch, 0, 5},

        // Newer epochs.
        {"newer epoch, seq 0: a claim", rec(5, 3), no_floor, write(6, 0), v::apply},
        {"much newer epoch, seq 0", rec(5, 3), no_floor, write(100, 0), v::apply},
        {"newer epoch, seq 1: 400 expecting 0", rec(5, 3), no_floor, write(6, 1), v::new_epoch_seq, 0},

        // The epoch floor (extensions 5.4) binds writes with Stream-Incarnation.
        {"unknown producer at the floor, with incarnation: producer-expired", std::nullopt, 7,
         write(7, 0, none, true), v::producer_expired, 0, 7},
        {"unknown producer below the floor, with incarnation: producer-expired", std::nullopt, 7,
         write(3, 0, none, true), v::producer_expired, 0, 7},
        {"unknown producer above the floor, with incarnation: a claim", std::nullopt, 7, write(8, 0, none, true),
         v::apply},
        {"unknown producer at the floor, without incarnation: a claim (base rule)", std::nullopt, 7, write(7, 0),
         v::apply},
        {"state opened below the floor, write with incarnation: producer-expired",
         rec(3, 2, none, none, std::nullopt, 0, false), 7, write(3, 3, none, true), v::producer_expired, 0, 7},
        {"state opened below the floor, claim at the floor with incarnation: producer-expired",
         rec(3, 2, none, none, std::nullopt, 0, false), 7, write(7, 0, none, true), v::producer_expired, 0, 7},
        {"state opened below the floor, claim above it with incarnation: a claim",
         rec(3, 2, none, none, std::nullopt, 0, false), 7, write(8, 0, none, true), v::apply},
        {"state opened below the floor, write without incarnation: base rules",
         rec(3, 2, none, none, std::nullopt, 0, false), 7, write(3, 3), v::apply},
        {"state opened above the floor: never refused for the floor", rec(9, 2), 12, write(9, 3, none, true),
         v::apply},
    };
    for (const auto& row : rows) {
        SCOPED_TRACE(row.what);
        const auto d = evaluate_producer(row.record ? &*row.record : nullptr, row.floor, row.w);
        EXPECT_EQ(verdict_name(d.verdict), std::string(verdict_name(row.verdict)));
        if (row.verdict == producer_verdict::seq_gap || row.verdict == producer_verdict::new_epoch_seq) {
            EXPECT_EQ(d.expected_seq, row.expected_seq);
        }
        if (row.answer_epoch != 0) {
            EXPECT_EQ(d.answer_epoch, row.answer_epoch);
        }
        EXPECT_EQ(d.closed_epoch, row.closed_epoch);
        if (row.closed_epoch) {
            EXPECT_EQ(d.closed_seq, row.closed_seq);
        }
    }
}

TEST(ProducerRules, HistoryRewriteClosesTheCurrentEpoch) {
    producer_record r = rec(3, 5, A);
    r.closed_by_history = true;
    // Writes past what survived: epoch-closed;by=history, closed at the surviving seq.
    auto d = evaluate_producer(&r, std::nullopt, write(3, 6, B));
    EXPECT_EQ(d.verdict, producer_verdict::epoch_closed_by_history);
    EXPECT_EQ(d.answer_epoch, 3u);
    EXPECT_EQ(d.closed_epoch, std::optional<std::uint64_t>(3));
    EXPECT_EQ(d.closed_seq, 5u);
    EXPECT_EQ(evaluate_producer(&r, std::nullopt, write(3, 9)).verdict, producer_verdict::epoch_closed_by_history);
    // A repeat of a write that survived gets its receipt.
    EXPECT_EQ(evaluate_producer(&r, std::nullopt, write(3, 5, A)).verdict, producer_verdict::repeat);
    EXPECT_EQ(evaluate_producer(&r, std::nullopt, write(3, 2)).verdict, producer_verdict::repeat_evicted);
    // A claim of a later epoch opens it again.
    EXPECT_EQ(evaluate_producer(&r, std::nullopt, write(4, 0)).verdict, producer_verdict::apply);
    const producer_record claimed = record_applied(&r, std::nullopt, write(4, 0), 0, 1, 1);
    EXPECT_FALSE(claimed.closed_by_history);
    EXPECT_EQ(evaluate_producer(&claimed, std::nullopt, write(4, 1)).verdict, producer_verdict::apply);
}

TEST(ProducerRules, ClaimClosesTheEpochItReplaces) {
    const producer_record old = rec(4, 9);
    const producer_record next = record_applied(&old, std::nullopt, write(5, 0, A), 100, 120, 1000);
    EXPECT_EQ(next.epoch, 5u);
    EXPECT_EQ(next.last_seq, 0u);
    EXPECT_EQ(next.closed_epoch, std::optional<std::uint64_t>(4));
    EXPECT_EQ(next.closed_seq, 9u);
    EXPECT_EQ(next.claim_identity, A);
    EXPECT_EQ(next.last_identity, A);
    EXPECT_EQ(next.last_start, 100u);
    EXPECT_EQ(next.last_end, 120u);
    // The replaced epoch now answers epoch-closed;by=claim.
    const auto d = evaluate_producer(&next, std::nullopt, write(4, 3));
    EXPECT_EQ(d.verdict, producer_verdict::epoch_closed_by_claim);
}

TEST(ProducerRules, WritesOfTheEpochKeepTheClaimIdentity) {
    producer_record r = record_applied(nullptr, std::nullopt, write(0, 0, A), 0, 5, 1);
    r = record_applied(&r, std::nullopt, write(0, 1, B), 5, 9, 2);
    EXPECT_EQ(r.claim_identity, A);
    EXPECT_EQ(r.last_identity, B);
    EXPECT_EQ(evaluate_producer(&r, std::nullopt, write(0, 0, A)).verdict, producer_verdict::repeat_evicted);
    EXPECT_EQ(evaluate_producer(&r, std::nullopt, write(0, 0, B)).verdict, producer_verdict::key_conflict);
}

TEST(ProducerRules, ClaimOnStateBelowTheFloorReportsNoClosureAndLiftsIt) {
    const producer_record low = rec(3, 2, none, none, std::nullopt, 0, false);
    // Without Stream-Incarnation, above the floor: lifts the state, no closure.
    const producer_record lifted = record_applied(&low, 7, write(8, 0), 0, 1, 5);
    EXPECT_TRUE(lifted.above_floor);
    EXPECT_FALSE(lifted.closed_epoch.has_value());
    // The replaced epoch answers stale-epoch, not epoch-closed.
    EXPECT_EQ(evaluate_producer(&lifted, 7, write(3, 3)).verdict, producer_verdict::stale_epoch);
    // Later writes with Stream-Incarnation are no longer refused for the floor.
    EXPECT_EQ(evaluate_producer(&lifted, 7, write(8, 1, none, true)).verdict, producer_verdict::apply);
    // A claim that stays at or below the floor keeps the state below it.
    const producer_record still_low = record_applied(&low, 7, write(6, 0), 0, 1, 5);
    EXPECT_FALSE(still_low.above_floor);
    EXPECT_FALSE(still_low.closed_epoch.has_value());
}

TEST(ProducerRules, NewProducerOpensAboveOrBelowTheFloor) {
    EXPECT_TRUE(record_applied(nullptr, std::nullopt, write(0, 0), 0, 1, 1).above_floor);
    EXPECT_TRUE(record_applied(nullptr, 4, write(5, 0), 0, 1, 1).above_floor);
    EXPECT_FALSE(record_applied(nullptr, 4, write(4, 0), 0, 1, 1).above_floor);
    EXPECT_FALSE(record_applied(nullptr, 4, write(2, 0), 0, 1, 1).closed_epoch.has_value());
}

TEST(ProducerNumbers, CanonicalDecimalsUpTo2Pow53Minus1) {
    EXPECT_EQ(*parse_producer_number("0"), 0u);
    EXPECT_EQ(*parse_producer_number("9007199254740991"), max_producer_number);
    for (const char* bad : {"", "-1", "01", "1abc", "abc", "1.0", "+1", " 1", "9007199254740992",
                            "99999999999999999999"}) {
        SCOPED_TRACE(bad);
        EXPECT_FALSE(parse_producer_number(bad).ok());
    }
}

TEST(ProducerDigest, SixtyFourLowercaseHexDigits) {
    const std::string good(64, 'a');
    ASSERT_TRUE(parse_body_digest(good).ok());
    EXPECT_EQ((*parse_body_digest(good))[0], 0xaa);
    EXPECT_FALSE(parse_body_digest(std::string(63, 'a')).ok());
    EXPECT_FALSE(parse_body_digest(std::string(65, 'a')).ok());
    EXPECT_FALSE(parse_body_digest(std::string(64, 'A')).ok());
    EXPECT_FALSE(parse_body_digest(std::string(63, 'a') + "g").ok());
}

}  // namespace
}  // namespace dstream::protocol
