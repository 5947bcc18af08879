#include "protocol/producer.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace dstream::protocol {
namespace {

const char* verdict_name(producer_verdict v) {
    switch (v) {
        case producer_verdict::apply: return "apply";
        case producer_verdict::duplicate: return "duplicate";
        case producer_verdict::stale_epoch: return "stale_epoch";
        case producer_verdict::new_epoch_seq: return "new_epoch_seq";
        case producer_verdict::seq_gap: return "seq_gap";
    }
    return "?";
}

struct rule_row {
    const char* what;
    std::optional<producer_record> record;  // nullopt: the server holds no state
    std::uint64_t epoch;
    std::uint64_t seq;
    producer_verdict verdict;
    std::uint64_t expected_seq;  // checked for seq_gap and new_epoch_seq
};

producer_record rec(std::uint64_t epoch, std::uint64_t last_seq) {
    return producer_record{epoch, last_seq, 0, 0};
}

TEST(ProducerRules, DecisionTable) {
    using v = producer_verdict;
    const rule_row rows[] = {
        // A producer the server does not know.
        {"new producer, seq 0", std::nullopt, 0, 0, v::apply, 0},
        {"new producer at a later epoch, seq 0", std::nullopt, 7, 0, v::apply, 0},
        {"new producer, seq 1 -> gap expecting 0", std::nullopt, 0, 1, v::seq_gap, 0},
        {"new producer, seq 5 at epoch 3 -> gap expecting 0", std::nullopt, 3, 5, v::seq_gap, 0},
        // Same epoch.
        {"same epoch, seq == last -> duplicate", rec(2, 5), 2, 5, v::duplicate, 0},
        {"same epoch, seq < last -> duplicate", rec(2, 5), 2, 3, v::duplicate, 0},
        {"same epoch, seq 0 < last -> duplicate", rec(2, 5), 2, 0, v::duplicate, 0},
        {"same epoch, claim repeated (last 0, seq 0)", rec(2, 0), 2, 0, v::duplicate, 0},
        {"same epoch, next seq -> apply", rec(2, 5), 2, 6, v::apply, 0},
        {"same epoch, seq 1 after claim -> apply", rec(0, 0), 0, 1, v::apply, 0},
        {"same epoch, gap of one -> conflict", rec(2, 5), 2, 7, v::seq_gap, 6},
        {"same epoch, big gap", rec(2, 5), 2, 1000, v::seq_gap, 6},
        {"same epoch, gap after claim", rec(4, 0), 4, 2, v::seq_gap, 1},
        // Older epoch: fenced whatever the seq.
        {"older epoch, seq 0 -> stale", rec(5, 3), 4, 0, v::stale_epoch, 0},
        {"older epoch, next seq -> stale", rec(5, 3), 4, 4, v::stale_epoch, 0},
        {"much older epoch -> stale", rec(5, 3), 0, 99, v::stale_epoch, 0},
        // Newer epoch.
        {"newer epoch, seq 0 -> apply (claim)", rec(5, 3), 6, 0, v::apply, 0},
        {"much newer epoch, seq 0 -> apply", rec(5, 3), 100, 0, v::apply, 0},
        {"newer epoch, seq 1 -> 400", rec(5, 3), 6, 1, v::new_epoch_seq, 0},
        {"newer epoch, seq == old last+1 -> 400", rec(5, 3), 6, 4, v::new_epoch_seq, 0},
        // Bounds.
        {"max epoch claim", rec(0, 0), max_producer_number, 0, v::apply, 0},
        {"same epoch, seq after max-1", rec(1, max_producer_number - 1), 1, max_producer_number,
         v::apply, 0},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.what);
        const producer_decision d =
            evaluate_producer(r.record ? &*r.record : nullptr, r.epoch, r.seq);
        EXPECT_EQ(d.verdict, r.verdict) << "got " << verdict_name(d.verdict) << ", want "
                                        << verdict_name(r.verdict);
        if (r.verdict == v::seq_gap || r.verdict == v::new_epoch_seq) {
            EXPECT_EQ(d.expected_seq, r.expected_seq);
        }
    }
}

TEST(ProducerRules, DecisionIgnoresReceiptRange) {
    const producer_record a{3, 9, 0, 0};
    const producer_record b{3, 9, 1000, 2000};
    for (std::uint64_t seq : {0u, 9u, 10u, 11u}) {
        SCOPED_TRACE(seq);
        EXPECT_EQ(evaluate_producer(&a, 3, seq).verdict, evaluate_producer(&b, 3, seq).verdict);
    }
}

TEST(ProducerNumber, AcceptsCanonicalDecimalsUpTo2Pow53Minus1) {
    struct row {
        const char* text;
        std::uint64_t value;
    };
    const row rows[] = {
        {"0", 0},
        {"1", 1},
        {"42", 42},
        {"4294967296", 4294967296ULL},
        {"9007199254740991", max_producer_number},
    };
    static_assert(max_producer_number == 9007199254740991ULL);
    for (const auto& r : rows) {
        SCOPED_TRACE(r.text);
        const auto v = parse_producer_number(r.text);
        ASSERT_TRUE(v.ok()) << v.err().message;
        EXPECT_EQ(*v, r.value);
    }
}

TEST(ProducerNumber, RejectsOutOfRangeAndNonCanonical) {
    const char* bad[] = {
        "9007199254740992",      // 2^53
        "9007199254740993",
        "9999999999999999",      // 16 digits, above the bound
        "10000000000000000",     // 17 digits
        "18446744073709551616",  // 2^64: must not wrap
        "-1",
        "-0",
        "+1",
        "01",
        "00",
        "1abc",
        "abc",
        "",
        " 1",
        "1 ",
        "1.0",
        "1e3",
    };
    for (const char* text : bad) {
        SCOPED_TRACE(text);
        const auto v = parse_producer_number(text);
        ASSERT_FALSE(v.ok());
        EXPECT_EQ(v.err().code, error_code::invalid_producer);
    }
}

}  // namespace
}  // namespace dstream::protocol
