#include "state/group_state.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace dstream::state {
namespace {

using protocol::error_code;
using protocol::expiry_config;
using protocol::unix_ms;

constexpr std::uint64_t two52 = std::uint64_t{1} << 52;
constexpr std::uint64_t two53 = std::uint64_t{1} << 53;
constexpr const char* key = "bucket/stream";

// ------------------------------------------------------------- builders

create_stream make_create(std::string content_type = "text/plain", std::string body = "",
                          bool closed = false, expiry_config expiry = {},
                          std::optional<std::uint64_t> if_incarnation = std::nullopt,
                          std::string k = key) {
    create_stream c;
    c.key = std::move(k);
    c.content_type = std::move(content_type);
    c.body = std::move(body);
    c.closed = closed;
    c.expiry = expiry;
    c.if_incarnation = if_incarnation;
    return c;
}

append make_append(std::string body, std::string content_type = "text/plain", std::string k = key) {
    append a;
    a.key = std::move(k);
    a.content_type = std::move(content_type);
    a.body = std::move(body);
    return a;
}

append make_close_only(std::string k = key) {
    append a;
    a.key = std::move(k);
    a.close = true;
    return a;
}

append producer_write(std::string id, std::uint64_t epoch, std::uint64_t seq, std::string body,
                      bool close = false) {
    append a = make_append(std::move(body));
    a.producer = producer_key{std::move(id), epoch, seq};
    a.close = close;
    return a;
}

expiry_config ttl(std::uint64_t s) {
    expiry_config e;
    e.ttl_seconds = s;
    return e;
}

expiry_config at(unix_ms t) {
    expiry_config e;
    e.expires_at = t;
    return e;
}

// A group with a history id and a log index that moves on with every command.
struct group {
    group_state g;
    std::uint64_t index = 0;
    unix_ms now = 1'760'000'000'000;

    group() { run(init_group{0x1234567890abcdefULL}); }

    apply_result run(command_body body) {
        now += 1;
        return g.apply(command{now, std::move(body)}, ++index);
    }

    std::string bytes(std::string_view k = key) const {
        const stream* s = g.find(k);
        if (s == nullptr) return "<missing>";
        std::vector<byte_slice> slices;
        s->bytes.read(s->bytes.begin_offset(), std::numeric_limits<std::uint64_t>::max(), slices);
        std::string out;
        for (const auto& sl : slices) out.append(sl.view());
        return out;
    }
};

void expect_refused(const apply_result& r, error_code code) {
    ASSERT_TRUE(r.refusal.has_value()) << "expected refusal " << protocol::wire_code(code);
    EXPECT_EQ(r.refusal->code, code) << "got " << protocol::wire_code(r.refusal->code) << ": "
                                     << r.refusal->message;
    EXPECT_FALSE(r.wakes_readers);
}

void expect_ok(const apply_result& r) {
    EXPECT_FALSE(r.refusal.has_value())
        << protocol::wire_code(r.refusal->code) << ": " << r.refusal->message;
}

// ------------------------------------------------------------- init

TEST(GroupStateInit, FirstHistoryIdWins) {
    group_state g;
    EXPECT_EQ(g.history_id(), 0u);
    const auto r1 = g.apply(command{1, init_group{77}}, 1);
    EXPECT_FALSE(r1.refusal);
    EXPECT_EQ(r1.kind, write_kind::none);
    EXPECT_EQ(g.history_id(), 77u);
    g.apply(command{2, init_group{88}}, 2);
    EXPECT_EQ(g.history_id(), 77u);
}

// ------------------------------------------------------------- incarnation tokens

TEST(IncarnationToken, AlwaysInRange2Pow52To2Pow53) {
    std::mt19937_64 rng(1);
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t t = incarnation_token(rng(), static_cast<unix_ms>(rng()), rng());
        ASSERT_GE(t, two52);
        ASSERT_LT(t, two53);
    }
    for (std::uint64_t h : {0ULL, 1ULL, ~0ULL}) {
        for (unix_ms now : {unix_ms{0}, unix_ms{-1}, std::numeric_limits<unix_ms>::max()}) {
            for (std::uint64_t idx : {0ULL, 1ULL, ~0ULL}) {
                const std::uint64_t t = incarnation_token(h, now, idx);
                EXPECT_GE(t, two52);
                EXPECT_LT(t, two53);
            }
        }
    }
}

TEST(IncarnationToken, DependsOnHistoryTimeAndLogIndex) {
    const std::uint64_t base = incarnation_token(5, 1000, 10);
    EXPECT_EQ(incarnation_token(5, 1000, 10), base);
    EXPECT_NE(incarnation_token(6, 1000, 10), base);
    EXPECT_NE(incarnation_token(5, 1001, 10), base);
    EXPECT_NE(incarnation_token(5, 1000, 11), base);
}

// ------------------------------------------------------------- create

TEST(GroupStateCreate, NewStreamIsCreatedWithTokenAndInitialBody) {
    group t;
    const auto r = t.run(make_create("text/plain", "hello"));
    expect_ok(r);
    EXPECT_EQ(r.kind, write_kind::created);
    ASSERT_TRUE(r.incarnation.has_value());
    EXPECT_GE(*r.incarnation, two52);
    EXPECT_LT(*r.incarnation, two53);
    EXPECT_EQ(r.content_type, "text/plain");
    EXPECT_EQ(r.next_offset, 5u);
    EXPECT_FALSE(r.closed);
    EXPECT_TRUE(r.wakes_readers);
    EXPECT_EQ(t.bytes(), "hello");
    const stream* s = t.g.find(key);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->incarnation, *r.incarnation);
    EXPECT_EQ(s->incarnation, incarnation_token(t.g.history_id(), t.now, t.index));
    EXPECT_FALSE(s->json);
}

TEST(GroupStateCreate, JsonStreamIsFlaggedJson) {
    group t;
    t.run(make_create("Application/JSON; charset=utf-8"));
    ASSERT_NE(t.g.find(key), nullptr);
    EXPECT_TRUE(t.g.find(key)->json);
}

TEST(GroupStateCreate, CreateClosedWithBody) {
    group t;
    const auto r = t.run(make_create("text/plain", "final", true));
    expect_ok(r);
    EXPECT_EQ(r.kind, write_kind::created);
    EXPECT_TRUE(r.closed);
    EXPECT_EQ(r.next_offset, 5u);
    EXPECT_EQ(t.bytes(), "final");
}

TEST(GroupStateCreate, SameConfigurationIsIdempotent200WithSameIncarnation) {
    struct row {
        const char* what;
        create_stream first;
        create_stream again;
    };
    const row rows[] = {
        {"identical", make_create("text/plain"), make_create("text/plain")},
        {"content type differs only in case", make_create("application/json"),
         make_create("APPLICATION/Json")},
        {"content type differs only in parameters", make_create("text/plain"),
         make_create("text/plain; charset=utf-8")},
        {"same ttl", make_create("text/plain", "", false, ttl(60)),
         make_create("text/plain", "", false, ttl(60))},
        {"same expires-at", make_create("text/plain", "", false, at(1800000000000)),
         make_create("text/plain", "", false, at(1800000000000))},
        {"both closed", make_create("text/plain", "x", true), make_create("text/plain", "", true)},
        {"body of the repeat is ignored", make_create("text/plain", "one"),
         make_create("text/plain", "two")},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.what);
        group t;
        const auto created = t.run(r.first);
        ASSERT_EQ(created.kind, write_kind::created);
        const std::string before = t.bytes();
        const auto again = t.run(r.again);
        expect_ok(again);
        EXPECT_EQ(again.kind, write_kind::already_exists);
        EXPECT_EQ(again.incarnation, created.incarnation);
        EXPECT_EQ(again.next_offset, created.next_offset);
        EXPECT_EQ(again.content_type, r.first.content_type);  // the stream's, not the request's
        EXPECT_FALSE(again.wakes_readers);
        EXPECT_EQ(t.bytes(), before);
    }
}

TEST(GroupStateCreate, DifferentConfigurationIs409) {
    struct row {
        const char* what;
        create_stream first;
        create_stream again;
    };
    const row rows[] = {
        {"content type differs", make_create("text/plain"), make_create("text/html")},
        {"ttl differs", make_create("text/plain", "", false, ttl(60)),
         make_create("text/plain", "", false, ttl(61))},
        {"ttl added", make_create("text/plain"), make_create("text/plain", "", false, ttl(60))},
        {"ttl removed", make_create("text/plain", "", false, ttl(60)), make_create("text/plain")},
        {"ttl vs expires-at", make_create("text/plain", "", false, ttl(60)),
         make_create("text/plain", "", false, at(1800000000000))},
        {"expires-at differs", make_create("text/plain", "", false, at(1800000000000)),
         make_create("text/plain", "", false, at(1800000000001))},
        {"open stream, create closed", make_create("text/plain"),
         make_create("text/plain", "", true)},
        {"closed stream, create open", make_create("text/plain", "", true),
         make_create("text/plain")},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.what);
        group t;
        const auto created = t.run(r.first);
        ASSERT_EQ(created.kind, write_kind::created);
        const auto again = t.run(r.again);
        expect_refused(again, error_code::stream_already_exists_conflict);
        EXPECT_EQ(protocol::http_status(again.refusal->code), 409u);
        EXPECT_EQ(again.incarnation, created.incarnation);
        EXPECT_EQ(again.content_type, r.first.content_type);
        // Nothing changed.
        const stream* s = t.g.find(key);
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->incarnation, *created.incarnation);
        EXPECT_EQ(s->expiry, r.first.expiry);
        EXPECT_EQ(s->closed, r.first.closed);
    }
}

TEST(GroupStateCreate, StreamClosedByAppendMatchesAClosedCreate) {
    group t;
    t.run(make_create("text/plain", "a"));
    expect_ok(t.run(make_close_only()));
    const auto closed_put = t.run(make_create("text/plain", "", true));
    expect_ok(closed_put);
    EXPECT_EQ(closed_put.kind, write_kind::already_exists);
    EXPECT_TRUE(closed_put.closed);
    expect_refused(t.run(make_create("text/plain")), error_code::stream_already_exists_conflict);
}

TEST(GroupStateCreate, DeleteThenRecreateGivesANewIncarnationAndFreshState) {
    group t;
    const auto first = t.run(make_create("text/plain", "old"));
    append seq = make_append("x");
    seq.stream_seq = "5";
    expect_ok(t.run(seq));
    expect_ok(t.run(producer_write("p", 3, 0, "y")));

    const auto del = t.run(delete_stream{key, std::nullopt});
    expect_ok(del);
    EXPECT_EQ(del.kind, write_kind::deleted);
    EXPECT_TRUE(del.wakes_readers);
    EXPECT_EQ(t.g.find(key), nullptr);

    const auto second = t.run(make_create("text/plain", "new"));
    EXPECT_EQ(second.kind, write_kind::created);
    ASSERT_TRUE(second.incarnation && first.incarnation);
    EXPECT_NE(*second.incarnation, *first.incarnation);
    EXPECT_GE(*second.incarnation, two52);
    EXPECT_LT(*second.incarnation, two53);
    EXPECT_EQ(t.bytes(), "new");
    // Stream-Seq and producer state did not survive.
    append low = make_append("z");
    low.stream_seq = "1";
    expect_ok(t.run(low));
    const auto p = t.run(producer_write("p", 0, 0, "w"));  // epoch 0 is not stale any more
    expect_ok(p);
    EXPECT_EQ(p.kind, write_kind::appended);
}

TEST(GroupStateCreate, TwoCreatesInTheSameMillisecondGetDifferentTokens) {
    group_state g;
    g.apply(command{1, init_group{9}}, 1);
    const auto a = g.apply(command{5000, make_create("text/plain", "", false, {}, {}, "b/one")}, 2);
    const auto b = g.apply(command{5000, make_create("text/plain", "", false, {}, {}, "b/two")}, 3);
    ASSERT_TRUE(a.incarnation && b.incarnation);
    EXPECT_NE(*a.incarnation, *b.incarnation);
}

// ------------------------------------------------------------- delete / expire

TEST(GroupStateDelete, MissingStreamIs404) {
    group t;
    expect_refused(t.run(delete_stream{key, std::nullopt}), error_code::stream_not_found);
}

TEST(GroupStateExpire, OnlyTheNamedIncarnationIsRemoved) {
    group t;
    const auto first = t.run(make_create("text/plain", "a"));
    ASSERT_TRUE(first.incarnation);

    // A late expiry of another incarnation changes nothing.
    const auto wrong = t.run(expire_stream{key, *first.incarnation ^ 1});
    EXPECT_FALSE(wrong.refusal);
    EXPECT_FALSE(wrong.wakes_readers);
    ASSERT_NE(t.g.find(key), nullptr);

    // Expiry of a stream that does not exist changes nothing either.
    const auto missing = t.run(expire_stream{"bucket/other", *first.incarnation});
    EXPECT_FALSE(missing.refusal);
    EXPECT_FALSE(missing.wakes_readers);

    const auto right = t.run(expire_stream{key, *first.incarnation});
    EXPECT_FALSE(right.refusal);
    EXPECT_TRUE(right.wakes_readers);
    EXPECT_EQ(t.g.find(key), nullptr);

    // Recreated: the old incarnation's expiry does not remove the new one.
    const auto second = t.run(make_create("text/plain", "b"));
    ASSERT_TRUE(second.incarnation);
    t.run(expire_stream{key, *first.incarnation});
    ASSERT_NE(t.g.find(key), nullptr);
    EXPECT_EQ(t.g.find(key)->incarnation, *second.incarnation);
    EXPECT_EQ(t.bytes(), "b");
}

// ------------------------------------------------------------- append basics

TEST(GroupStateAppend, MissingStreamIs404) {
    group t;
    expect_refused(t.run(make_append("x")), error_code::stream_not_found);
    expect_refused(t.run(make_close_only()), error_code::stream_not_found);
    expect_refused(t.run(producer_write("p", 0, 0, "x")), error_code::stream_not_found);
    EXPECT_EQ(t.g.stream_count(), 0u);
}

TEST(GroupStateAppend, AppendsMoveTheTailAndReportTheRange) {
    group t;
    const auto c = t.run(make_create("text/plain", "ab"));
    const auto r = t.run(make_append("cde"));
    expect_ok(r);
    EXPECT_EQ(r.kind, write_kind::appended);
    EXPECT_FALSE(r.producer_write);
    EXPECT_EQ(r.start_offset, 2u);
    EXPECT_EQ(r.next_offset, 5u);
    EXPECT_EQ(r.incarnation, c.incarnation);
    EXPECT_TRUE(r.wakes_readers);
    EXPECT_EQ(t.bytes(), "abcde");
    EXPECT_EQ(t.g.find(key)->last_write_ms, t.now);
}

TEST(GroupStateAppend, ContentTypeMismatchIs409AndAppliesNothing) {
    group t;
    t.run(make_create("text/plain", "a"));
    const auto r = t.run(make_append("b", "application/json"));
    expect_refused(r, error_code::content_type_mismatch);
    EXPECT_EQ(protocol::http_status(r.refusal->code), 409u);
    EXPECT_FALSE(r.last_stream_seq.has_value());
    EXPECT_EQ(t.bytes(), "a");
    // Case and parameters do not matter.
    expect_ok(t.run(make_append("c", "TEXT/PLAIN; charset=utf-8")));
    EXPECT_EQ(t.bytes(), "ac");
}

TEST(GroupStateAppend, CloseOnlyIgnoresContentType) {
    group t;
    t.run(make_create("text/plain", "a"));
    append close = make_close_only();
    close.content_type = "application/octet-stream";
    const auto r = t.run(close);
    expect_ok(r);
    EXPECT_TRUE(r.closed);
    EXPECT_EQ(r.next_offset, 1u);
}

TEST(GroupStateAppend, StreamSeqMustIncreaseLexicographically) {
    struct step {
        const char* seq;
        bool accepted;
        const char* last_on_conflict;
    };
    const step steps[] = {
        {"b", true, nullptr},
        {"b", false, "b"},   // equal
        {"a", false, "b"},   // lower
        {"ba", true, nullptr},
        {"b", false, "ba"},
        {"9", false, "ba"},
        {"c", true, nullptr},
        {"10", false, "c"},  // lexicographic, not numeric
        {"d", true, nullptr},
    };
    group t;
    t.run(make_create("text/plain"));
    std::string expected_bytes;
    for (const auto& s : steps) {
        SCOPED_TRACE(s.seq);
        append a = make_append(std::string("[") + s.seq + "]");
        a.stream_seq = s.seq;
        const auto r = t.run(a);
        if (s.accepted) {
            expect_ok(r);
            expected_bytes += a.body;
        } else {
            expect_refused(r, error_code::stream_seq_conflict);
            ASSERT_TRUE(r.last_stream_seq.has_value());
            EXPECT_EQ(*r.last_stream_seq, s.last_on_conflict);
        }
        EXPECT_EQ(t.bytes(), expected_bytes);
    }
    // Appends without Stream-Seq are unaffected.
    expect_ok(t.run(make_append("!")));
}

TEST(GroupStateAppend, StreamSeqComparesBytesNotSignedChars) {
    group t;
    t.run(make_create("text/plain"));
    append a = make_append("1");
    a.stream_seq = "z";
    expect_ok(t.run(a));
    append b = make_append("2");
    b.stream_seq = "\xc3\xa9";  // UTF-8 e-acute: byte 0xc3 > 'z'
    expect_ok(t.run(b));
}

TEST(GroupStateAppend, RejectedStreamSeqDoesNotAdvanceTheLastSeq) {
    group t;
    t.run(make_create("text/plain"));
    append a = make_append("x", "application/json");  // content type mismatch
    a.stream_seq = "5";
    expect_refused(t.run(a), error_code::content_type_mismatch);
    append b = make_append("y");
    b.stream_seq = "3";
    expect_ok(t.run(b));
}

TEST(GroupStateAppend, CloseWithBodyAppendsAndCloses) {
    group t;
    t.run(make_create("text/plain", "a"));
    append a = make_append("b");
    a.close = true;
    const auto r = t.run(a);
    expect_ok(r);
    EXPECT_TRUE(r.closed);
    EXPECT_EQ(r.start_offset, 1u);
    EXPECT_EQ(r.next_offset, 2u);
    EXPECT_TRUE(t.g.find(key)->closed);
}

TEST(GroupStateAppend, CloseOnlyOnClosedStreamIsIdempotent) {
    group t;
    t.run(make_create("text/plain", "abc"));
    const auto first = t.run(make_close_only());
    expect_ok(first);
    EXPECT_TRUE(first.closed);
    EXPECT_EQ(first.next_offset, 3u);
    EXPECT_TRUE(first.wakes_readers);
    for (int i = 0; i < 3; ++i) {
        const auto again = t.run(make_close_only());
        expect_ok(again);
        EXPECT_EQ(again.kind, write_kind::appended);
        EXPECT_TRUE(again.closed);
        EXPECT_EQ(again.next_offset, 3u);
        EXPECT_FALSE(again.wakes_readers);
    }
    EXPECT_EQ(t.bytes(), "abc");
}

TEST(GroupStateAppend, AppendToClosedStreamIs409WithFinalOffset) {
    group t;
    t.run(make_create("text/plain", "abc", true));
    for (bool close : {false, true}) {
        SCOPED_TRACE(close);
        append a = make_append("more");
        a.close = close;
        const auto r = t.run(a);
        expect_refused(r, error_code::stream_closed);
        EXPECT_EQ(protocol::http_status(r.refusal->code), 409u);
        EXPECT_TRUE(r.closed);
        EXPECT_EQ(r.next_offset, 3u);
        EXPECT_TRUE(r.incarnation.has_value());
    }
    EXPECT_EQ(t.bytes(), "abc");
}

TEST(GroupStateAppend, ClosedCheckComesBeforeContentTypeAndSeq) {
    group t;
    t.run(make_create("text/plain", "abc", true));
    append a = make_append("x", "application/json");
    a.stream_seq = "";
    expect_refused(t.run(a), error_code::stream_closed);
}

TEST(GroupStateAppend, ContentFaultWithoutProducer) {
    group t;
    t.run(make_create("application/json"));
    append a = make_append("", "application/json");
    a.content_fault = make_error(error_code::invalid_request, "bad json");
    const auto r = t.run(a);
    expect_refused(r, error_code::invalid_request);
    EXPECT_EQ(r.refusal->message, "bad json");
    // A fault with Stream-Closed set does not count as a close-only request.
    a.close = true;
    expect_refused(t.run(a), error_code::invalid_request);
    EXPECT_FALSE(t.g.find(key)->closed);
}

// ------------------------------------------------------------- producers

TEST(GroupStateProducer, NewProducerSeq0AppliesWithReceipt) {
    group t;
    t.run(make_create("text/plain", "xy"));
    const auto r = t.run(producer_write("p1", 0, 0, "abc"));
    expect_ok(r);
    EXPECT_EQ(r.kind, write_kind::appended);
    EXPECT_TRUE(r.producer_write);
    EXPECT_EQ(r.producer_epoch, 0u);
    EXPECT_EQ(r.producer_seq, 0u);
    EXPECT_EQ(r.start_offset, 2u);
    EXPECT_EQ(r.next_offset, 5u);
    const auto& rec = t.g.find(key)->producers.at("p1");
    EXPECT_EQ(rec.epoch, 0u);
    EXPECT_EQ(rec.last_seq, 0u);
    EXPECT_EQ(rec.last_start, 2u);
    EXPECT_EQ(rec.last_end, 5u);
}

TEST(GroupStateProducer, DuplicateIsRepeatedWithTheOriginalReceipt) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "aaa")));
    const auto applied = t.run(producer_write("p", 0, 1, "bb"));
    expect_ok(applied);
    expect_ok(t.run(make_append("zz")));  // someone else moves the tail on

    const auto dup = t.run(producer_write("p", 0, 1, "bb"));
    expect_ok(dup);
    EXPECT_EQ(dup.kind, write_kind::repeated);
    EXPECT_TRUE(dup.producer_write);
    EXPECT_EQ(dup.producer_epoch, 0u);
    EXPECT_EQ(dup.producer_seq, 1u);
    EXPECT_EQ(dup.start_offset, applied.start_offset);
    EXPECT_EQ(dup.next_offset, applied.next_offset);
    EXPECT_FALSE(dup.closed);
    EXPECT_FALSE(dup.wakes_readers);
    EXPECT_EQ(t.bytes(), "aaabbzz");
}

TEST(GroupStateProducer, DuplicateIsDecidedByTheKeyNotTheBody) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "aaa")));
    const auto dup = t.run(producer_write("p", 0, 0, "something else entirely"));
    EXPECT_EQ(dup.kind, write_kind::repeated);
    EXPECT_EQ(t.bytes(), "aaa");
}

TEST(GroupStateProducer, StaleEpochIs403WithCurrentEpoch) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 2, 0, "a")));
    for (std::uint64_t old_epoch : {0u, 1u}) {
        SCOPED_TRACE(old_epoch);
        const auto r = t.run(producer_write("p", old_epoch, 0, "z"));
        expect_refused(r, error_code::producer_epoch_stale);
        EXPECT_EQ(protocol::http_status(r.refusal->code), 403u);
        EXPECT_EQ(r.producer_epoch, 2u);
    }
    EXPECT_EQ(t.bytes(), "a");
}

TEST(GroupStateProducer, SeqGapIs409WithExpectedAndReceived) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "a")));
    const auto r = t.run(producer_write("p", 0, 5, "z"));
    expect_refused(r, error_code::producer_seq_conflict);
    EXPECT_EQ(protocol::http_status(r.refusal->code), 409u);
    EXPECT_EQ(r.expected_seq, 1u);
    EXPECT_EQ(r.received_seq, 5u);
    EXPECT_EQ(t.bytes(), "a");
    // The producer can still continue from the expected seq.
    expect_ok(t.run(producer_write("p", 0, 1, "b")));
}

TEST(GroupStateProducer, UnknownProducerWithSeqAboveZeroIs409Expecting0) {
    group t;
    t.run(make_create("text/plain"));
    const auto r = t.run(producer_write("p", 4, 3, "z"));
    expect_refused(r, error_code::producer_seq_conflict);
    EXPECT_EQ(r.expected_seq, 0u);
    EXPECT_EQ(r.received_seq, 3u);
    EXPECT_TRUE(t.g.find(key)->producers.empty());
}

TEST(GroupStateProducer, NewEpochWithSeqAboveZeroIs400) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "a")));
    const auto r = t.run(producer_write("p", 1, 1, "z"));
    expect_refused(r, error_code::invalid_producer);
    EXPECT_EQ(protocol::http_status(r.refusal->code), 400u);
    EXPECT_EQ(r.expected_seq, 0u);
    EXPECT_EQ(t.g.find(key)->producers.at("p").epoch, 0u);
}

TEST(GroupStateProducer, ClaimOfNewerEpochFencesTheOldOne) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "a")));
    expect_ok(t.run(producer_write("p", 0, 1, "b")));
    const auto claim = t.run(producer_write("p", 1, 0, "c"));
    expect_ok(claim);
    EXPECT_EQ(claim.producer_epoch, 1u);
    EXPECT_EQ(claim.producer_seq, 0u);
    EXPECT_EQ(claim.closed_epoch, std::optional<std::uint64_t>(0));
    EXPECT_EQ(claim.closed_seq, 1u);
    // extensions 5.3: the epoch the claim closed answers epoch-closed;by=claim.
    const auto zombie = t.run(producer_write("p", 0, 2, "zombie"));
    expect_refused(zombie, error_code::producer_epoch_closed);
    EXPECT_EQ(zombie.producer_outcome, "epoch-closed;by=claim");
    EXPECT_EQ(zombie.producer_epoch, 1u);
    EXPECT_EQ(zombie.closed_epoch, std::optional<std::uint64_t>(0));
    EXPECT_EQ(zombie.closed_seq, 1u);
    EXPECT_EQ(t.bytes(), "abc");
}

TEST(GroupStateProducer, ProducersAreIndependent) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("a", 0, 0, "1")));
    expect_ok(t.run(producer_write("b", 5, 0, "2")));
    expect_ok(t.run(producer_write("a", 0, 1, "3")));
    EXPECT_EQ(t.run(producer_write("b", 5, 0, "2")).kind, write_kind::repeated);
    EXPECT_EQ(t.bytes(), "123");
}

TEST(GroupStateProducer, DuplicateOfClosingWriteIsAnsweredOnClosedStream) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "a")));
    const auto closing = t.run(producer_write("p", 0, 1, "end", true));
    expect_ok(closing);
    EXPECT_TRUE(closing.closed);

    const auto dup = t.run(producer_write("p", 0, 1, "end", true));
    expect_ok(dup);
    EXPECT_EQ(dup.kind, write_kind::repeated);
    EXPECT_TRUE(dup.closed);
    EXPECT_EQ(dup.start_offset, 1u);
    EXPECT_EQ(dup.next_offset, 4u);
    EXPECT_EQ(dup.producer_seq, 1u);

    // A new write of the same producer is refused by the closure.
    const auto next = t.run(producer_write("p", 0, 2, "more"));
    expect_refused(next, error_code::stream_closed);
    EXPECT_TRUE(next.closed);
    EXPECT_EQ(next.next_offset, 4u);
    EXPECT_EQ(t.g.find(key)->producers.at("p").last_seq, 1u);  // not advanced
    EXPECT_EQ(t.bytes(), "aend");
}

TEST(GroupStateProducer, DuplicateOnStreamClosedByOthersIsStillARepeat) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "a")));
    expect_ok(t.run(make_close_only()));
    const auto dup = t.run(producer_write("p", 0, 0, "a"));
    expect_ok(dup);
    EXPECT_EQ(dup.kind, write_kind::repeated);
    EXPECT_EQ(dup.start_offset, 0u);
    EXPECT_EQ(dup.next_offset, 1u);
    // extensions 5.3: the receipt says Stream-Closed only when this write
    // closed the stream; another request closed it here.
    EXPECT_FALSE(dup.closed);
}

TEST(GroupStateProducer, ContentFaultIsDecidedAfterProducerRules) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "abc")));
    const auto fault = [] { return make_error(error_code::invalid_request, "bad body"); };

    // A repeat with a content fault gets the repeat answer, not the fault.
    append dup = producer_write("p", 0, 0, "");
    dup.content_fault = fault();
    const auto r = t.run(dup);
    expect_ok(r);
    EXPECT_EQ(r.kind, write_kind::repeated);
    EXPECT_EQ(r.start_offset, 0u);
    EXPECT_EQ(r.next_offset, 3u);

    // A stale epoch with a content fault gets the 403.
    expect_ok(t.run(producer_write("q", 3, 0, "d")));
    append stale = producer_write("q", 1, 0, "");
    stale.content_fault = fault();
    const auto s = t.run(stale);
    expect_refused(s, error_code::producer_epoch_stale);
    EXPECT_EQ(s.producer_epoch, 3u);

    // A gap with a content fault gets the 409 gap.
    append gap = producer_write("p", 0, 9, "");
    gap.content_fault = fault();
    expect_refused(t.run(gap), error_code::producer_seq_conflict);

    // A new epoch with seq > 0 and a content fault gets the 400 of the producer rules.
    append epoch = producer_write("p", 1, 4, "");
    epoch.content_fault = fault();
    expect_refused(t.run(epoch), error_code::invalid_producer);

    // A write that would apply gets the fault, and the producer does not advance.
    append fresh = producer_write("p", 0, 1, "");
    fresh.content_fault = fault();
    const auto f = t.run(fresh);
    expect_refused(f, error_code::invalid_request);
    EXPECT_EQ(f.refusal->message, "bad body");
    EXPECT_EQ(t.g.find(key)->producers.at("p").last_seq, 0u);
    EXPECT_EQ(t.bytes(), "abcd");
}

TEST(GroupStateProducer, ClosedCheckComesBeforeContentFaultForAWriteThatWouldApply) {
    group t;
    t.run(make_create("text/plain", "", true));
    append w = producer_write("p", 0, 0, "");
    w.content_fault = make_error(error_code::empty_append, "empty");
    expect_refused(t.run(w), error_code::stream_closed);
}

TEST(GroupStateProducer, ContentTypeMismatchDoesNotAdvanceTheProducer) {
    group t;
    t.run(make_create("text/plain"));
    append w = producer_write("p", 0, 0, "x");
    w.content_type = "image/png";
    expect_refused(t.run(w), error_code::content_type_mismatch);
    EXPECT_TRUE(t.g.find(key)->producers.empty());
    expect_ok(t.run(producer_write("p", 0, 0, "x")));
}

TEST(GroupStateProducer, StreamSeqConflictDoesNotAdvanceTheProducer) {
    group t;
    t.run(make_create("text/plain"));
    append first = producer_write("p", 0, 0, "a");
    first.stream_seq = "5";
    expect_ok(t.run(first));
    append second = producer_write("p", 0, 1, "b");
    second.stream_seq = "4";
    const auto r = t.run(second);
    expect_refused(r, error_code::stream_seq_conflict);
    EXPECT_EQ(r.last_stream_seq, "5");
    EXPECT_EQ(t.g.find(key)->producers.at("p").last_seq, 0u);
}

TEST(GroupStateProducer, CloseOnlyProducerWriteOnOpenStream) {
    group t;
    t.run(make_create("text/plain", "abc"));
    const auto r = t.run(producer_write("p", 0, 0, "", true));
    expect_ok(r);
    EXPECT_EQ(r.kind, write_kind::appended);
    EXPECT_TRUE(r.closed);
    EXPECT_EQ(r.start_offset, 3u);
    EXPECT_EQ(r.next_offset, 3u);
    EXPECT_EQ(r.producer_seq, 0u);
    const auto dup = t.run(producer_write("p", 0, 0, "", true));
    EXPECT_EQ(dup.kind, write_kind::repeated);
    EXPECT_EQ(dup.start_offset, 3u);
    EXPECT_EQ(dup.next_offset, 3u);
    EXPECT_TRUE(dup.closed);
}

TEST(GroupStateProducer, CloseOnlyProducerWriteOnClosedStreamHasAnEmptyReceiptAtTheTail) {
    group t;
    t.run(make_create("text/plain", "abc", true));
    const auto r = t.run(producer_write("p", 0, 0, "", true));
    expect_ok(r);
    EXPECT_TRUE(r.closed);
    EXPECT_EQ(r.start_offset, 3u);
    EXPECT_EQ(r.next_offset, 3u);
    EXPECT_EQ(r.producer_epoch, 0u);
    EXPECT_EQ(r.producer_seq, 0u);
}

TEST(GroupStateProducer, CloseOnlyProducerWriteOnClosedStreamIsRememberedForTheNextSeq) {
    group t;
    t.run(make_create("text/plain", "abc", true));
    expect_ok(t.run(producer_write("p", 0, 0, "", true)));
    const auto next = t.run(producer_write("p", 0, 1, "", true));
    expect_ok(next);
    EXPECT_TRUE(next.closed);
}

TEST(GroupStateProducer, RepeatOfAnOlderWriteDoesNotClaimAForeignRange) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "aaa")));  // [0,3)
    expect_ok(t.run(producer_write("p", 0, 1, "bb")));   // [3,5)
    expect_ok(t.run(make_close_only()));
    const auto r = t.run(producer_write("p", 0, 0, "aaa"));
    EXPECT_EQ(r.kind, write_kind::repeated);
    EXPECT_EQ(r.producer_seq, 1u);
    EXPECT_FALSE(r.start_offset == 0 && r.next_offset == 5)
        << "answer claims the range [0,5), which seq 0 never wrote";
    EXPECT_FALSE(r.closed) << "seq 0 did not close the stream";
}

// ------------------------------------------------------------- Stream-Incarnation

TEST(GroupStateIncarnation, AppendWithWrongIncarnationAppliesNothing) {
    group t;
    const auto c = t.run(make_create("text/plain", "a"));
    ASSERT_TRUE(c.incarnation);
    const std::uint64_t wrong = *c.incarnation + 1;

    append plain = make_append("b");
    plain.if_incarnation = wrong;
    auto r = t.run(plain);
    expect_refused(r, error_code::incarnation_mismatch);
    EXPECT_EQ(protocol::http_status(r.refusal->code), 412u);
    EXPECT_EQ(r.incarnation, c.incarnation);  // the current token

    append prod = producer_write("p", 0, 0, "b");
    prod.if_incarnation = wrong;
    expect_refused(t.run(prod), error_code::incarnation_mismatch);
    EXPECT_TRUE(t.g.find(key)->producers.empty());

    append close = make_close_only();
    close.if_incarnation = wrong;
    expect_refused(t.run(close), error_code::incarnation_mismatch);
    EXPECT_FALSE(t.g.find(key)->closed);

    append seq = make_append("b");
    seq.stream_seq = "1";
    seq.if_incarnation = wrong;
    expect_refused(t.run(seq), error_code::incarnation_mismatch);
    EXPECT_FALSE(t.g.find(key)->last_stream_seq.has_value());

    EXPECT_EQ(t.bytes(), "a");

    // The right token applies.
    append right = make_append("b");
    right.if_incarnation = c.incarnation;
    expect_ok(t.run(right));
    EXPECT_EQ(t.bytes(), "ab");
}

TEST(GroupStateIncarnation, MismatchComesBeforeProducerRepeat) {
    group t;
    const auto c = t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "a")));
    append dup = producer_write("p", 0, 0, "a");
    dup.if_incarnation = *c.incarnation ^ 0x10;
    expect_refused(t.run(dup), error_code::incarnation_mismatch);
}

TEST(GroupStateIncarnation, MissingStreamAnswers404NotMismatchForAppendAndDelete) {
    group t;
    append a = make_append("x");
    a.if_incarnation = two52;
    expect_refused(t.run(a), error_code::stream_not_found);
    expect_refused(t.run(delete_stream{key, two52}), error_code::stream_not_found);
}

TEST(GroupStateIncarnation, DeleteWithWrongIncarnationKeepsTheStream) {
    group t;
    const auto c = t.run(make_create("text/plain", "a"));
    const auto r = t.run(delete_stream{key, *c.incarnation + 1});
    expect_refused(r, error_code::incarnation_mismatch);
    EXPECT_EQ(r.incarnation, c.incarnation);
    ASSERT_NE(t.g.find(key), nullptr);
    expect_ok(t.run(delete_stream{key, c.incarnation}));
    EXPECT_EQ(t.g.find(key), nullptr);
}

TEST(GroupStateIncarnation, CreateOnExistingStreamChecksTheToken) {
    group t;
    const auto c = t.run(make_create("text/plain", "a"));
    const auto wrong = t.run(make_create("text/plain", "", false, {}, *c.incarnation + 1));
    expect_refused(wrong, error_code::incarnation_mismatch);
    EXPECT_EQ(wrong.incarnation, c.incarnation);
    // The mismatch wins even over a configuration conflict.
    expect_refused(t.run(make_create("text/html", "", false, {}, *c.incarnation + 1)),
                   error_code::incarnation_mismatch);
    const auto right = t.run(make_create("text/plain", "", false, {}, c.incarnation));
    expect_ok(right);
    EXPECT_EQ(right.kind, write_kind::already_exists);
}

TEST(GroupStateIncarnation, CreateWithTokenOnMissingStreamCreatesNothing) {
    group t;
    const auto r = t.run(make_create("text/plain", "a", false, {}, two52 + 5));
    expect_refused(r, error_code::incarnation_mismatch);
    EXPECT_FALSE(r.incarnation.has_value());
    EXPECT_EQ(t.g.stream_count(), 0u);
    EXPECT_EQ(t.g.find(key), nullptr);
}

TEST(GroupStateIncarnation, StaleTokenAfterRecreateIsRefused) {
    group t;
    const auto first = t.run(make_create("text/plain", "a"));
    t.run(delete_stream{key, std::nullopt});
    const auto second = t.run(make_create("text/plain", "b"));
    append late = make_append("c");
    late.if_incarnation = first.incarnation;
    const auto r = t.run(late);
    expect_refused(r, error_code::incarnation_mismatch);
    EXPECT_EQ(r.incarnation, second.incarnation);
    EXPECT_EQ(t.bytes(), "b");
}

// ------------------------------------------------------------- cold flush

flush_chunk make_flush(std::uint64_t incarnation, std::uint64_t start, std::uint64_t end) {
    return flush_chunk{key, incarnation, start, end, "obj-" + std::to_string(start)};
}

TEST(GroupStateFlush, FlushAtTheColdFrontierRecordsAChunkAndKeepsTheTail) {
    group t;
    const auto c = t.run(make_create("text/plain"));
    const std::string data(5000, 'd');
    expect_ok(t.run(make_append(data)));
    const auto r = t.run(make_flush(*c.incarnation, 0, 3000));
    expect_ok(r);
    const stream* s = t.g.find(key);
    ASSERT_EQ(s->chunks.size(), 1u);
    EXPECT_EQ(s->chunks[0].start, 0u);
    EXPECT_EQ(s->chunks[0].end, 3000u);
    EXPECT_EQ(s->chunks[0].object_key, "obj-0");
    EXPECT_EQ(s->cold_end(), 3000u);
    EXPECT_EQ(s->tail(), 5000u);
    EXPECT_LE(s->bytes.begin_offset(), 3000u);  // the hot tier still covers [cold_end, tail)
    EXPECT_EQ(s->hot_bytes_held(), 2000u);

    expect_ok(t.run(make_flush(*c.incarnation, 3000, 5000)));
    EXPECT_EQ(s->chunks.size(), 2u);
    EXPECT_EQ(s->cold_end(), 5000u);
    EXPECT_EQ(s->hot_bytes_held(), 0u);

    // Appends continue the offset space.
    const auto a = t.run(make_append("more"));
    expect_ok(a);
    EXPECT_EQ(a.start_offset, 5000u);
    EXPECT_EQ(a.next_offset, 5004u);
}

TEST(GroupStateFlush, StaleOrMalformedFlushChangesNothing) {
    group t;
    const auto c = t.run(make_create("text/plain"));
    expect_ok(t.run(make_append(std::string(5000, 'd'))));
    expect_ok(t.run(make_flush(*c.incarnation, 0, 2000)));
    const std::uint64_t inc = *c.incarnation;
    struct row {
        const char* what;
        flush_chunk f;
    };
    const row rows[] = {
        {"repeated flush", make_flush(inc, 0, 2000)},
        {"start below the frontier", make_flush(inc, 1000, 3000)},
        {"start above the frontier", make_flush(inc, 2500, 3000)},
        {"empty range", make_flush(inc, 2000, 2000)},
        {"end before start", make_flush(inc, 2000, 1000)},
        {"end beyond the tail", make_flush(inc, 2000, 5001)},
        {"other incarnation", make_flush(inc + 1, 2000, 3000)},
        {"missing stream", flush_chunk{"bucket/none", inc, 2000, 3000, "x"}},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.what);
        const auto res = t.run(r.f);
        EXPECT_EQ(res.kind, write_kind::none);
        EXPECT_FALSE(res.wakes_readers);
        const stream* s = t.g.find(key);
        ASSERT_EQ(s->chunks.size(), 1u);
        EXPECT_EQ(s->cold_end(), 2000u);
        EXPECT_EQ(s->tail(), 5000u);
    }
}

TEST(GroupStateFlush, FlushOfARecreatedStreamsOldIncarnationIsIgnored) {
    group t;
    const auto first = t.run(make_create("text/plain", std::string(3000, 'a')));
    t.run(delete_stream{key, std::nullopt});
    t.run(make_create("text/plain", std::string(3000, 'b')));
    t.run(make_flush(*first.incarnation, 0, 3000));
    EXPECT_TRUE(t.g.find(key)->chunks.empty());
    EXPECT_EQ(t.bytes(), std::string(3000, 'b'));
}

// ------------------------------------------------------------- determinism

bool same_result(const apply_result& a, const apply_result& b, std::string& why) {
    const auto differ = [&](const char* field) {
        why = field;
        return false;
    };
    if (a.refusal.has_value() != b.refusal.has_value()) return differ("refusal");
    if (a.refusal && (a.refusal->code != b.refusal->code || a.refusal->message != b.refusal->message))
        return differ("refusal detail");
    if (a.kind != b.kind) return differ("kind");
    if (a.producer_write != b.producer_write) return differ("producer_write");
    if (a.incarnation != b.incarnation) return differ("incarnation");
    if (a.content_type != b.content_type) return differ("content_type");
    if (a.expiry != b.expiry) return differ("expiry");
    if (a.start_offset != b.start_offset) return differ("start_offset");
    if (a.next_offset != b.next_offset) return differ("next_offset");
    if (a.closed != b.closed) return differ("closed");
    if (a.producer_epoch != b.producer_epoch) return differ("producer_epoch");
    if (a.producer_seq != b.producer_seq) return differ("producer_seq");
    if (a.expected_seq != b.expected_seq) return differ("expected_seq");
    if (a.received_seq != b.received_seq) return differ("received_seq");
    if (a.last_stream_seq != b.last_stream_seq) return differ("last_stream_seq");
    if (a.wakes_readers != b.wakes_readers) return differ("wakes_readers");
    return true;
}

std::vector<command> random_history(std::uint32_t seed, std::size_t n) {
    std::mt19937 rng(seed);
    const std::vector<std::string> keys = {"b/one", "b/two", "b/three"};
    const std::vector<std::string> types = {"text/plain", "TEXT/plain", "application/json"};
    const std::vector<std::string> producers = {"p", "q"};
    std::vector<command> out;
    out.push_back(command{1, init_group{seed * 2654435761ULL + 1}});
    unix_ms now = 1'700'000'000'000;
    std::map<std::string, std::uint64_t> seqs;
    for (std::size_t i = 0; i < n; ++i) {
        now += rng() % 3;  // repeated milliseconds on purpose
        const std::string& k = keys[rng() % keys.size()];
        switch (rng() % 10) {
            case 0:
            case 1: {
                create_stream c = make_create(types[rng() % types.size()],
                                              std::string(rng() % 5, 'c'), rng() % 4 == 0,
                                              rng() % 2 ? ttl(60) : expiry_config{}, {}, k);
                out.push_back(command{now, c});
                break;
            }
            case 2:
            case 3:
            case 4: {
                append a = make_append(std::string(1 + rng() % 2000, static_cast<char>('a' + rng() % 26)),
                                       types[rng() % types.size()], k);
                if (rng() % 4 == 0) a.stream_seq = std::to_string(rng() % 50);
                if (rng() % 6 == 0) a.close = true;
                out.push_back(command{now, a});
                break;
            }
            case 5:
            case 6: {
                const std::string& p = producers[rng() % producers.size()];
                std::uint64_t& s = seqs[k + p];
                const std::uint64_t epoch = rng() % 8 == 0 ? 1 : 0;
                const std::uint64_t seq = rng() % 3 == 0 ? s : (rng() % 5 == 0 ? s + 3 : ++s);
                append a = make_append(std::string(1 + rng() % 10, 'p'), "text/plain", k);
                a.producer = producer_key{p, epoch, seq};
                if (rng() % 10 == 0) {
                    a.body.clear();
                    a.content_fault = make_error(error_code::invalid_request, "fault");
                }
                out.push_back(command{now, a});
                break;
            }
            case 7:
                out.push_back(command{now, make_close_only(k)});
                break;
            case 8:
                out.push_back(command{now, delete_stream{k, std::nullopt}});
                break;
            case 9:
                out.push_back(command{now, expire_stream{k, rng() % 2 ? 0 : two52}});
                break;
        }
    }
    return out;
}

TEST(GroupStateDeterminism, SameCommandsGiveSameAnswersAndSameBytes) {
    for (std::uint32_t seed : {1u, 2u, 3u, 42u}) {
        SCOPED_TRACE(seed);
        const auto history = random_history(seed, 600);
        group_state a;
        group_state b;
        std::size_t created = 0;
        std::size_t refused = 0;
        for (std::size_t i = 0; i < history.size(); ++i) {
            const auto ra = a.apply(command(history[i]), i + 1);
            const auto rb = b.apply(command(history[i]), i + 1);
            std::string why;
            ASSERT_TRUE(same_result(ra, rb, why)) << "command " << i << " differs in " << why;
            created += ra.kind == write_kind::created;
            refused += ra.refusal.has_value();
        }
        EXPECT_GT(created, 0u);
        EXPECT_GT(refused, 0u);
        ASSERT_EQ(a.stream_count(), b.stream_count());
        EXPECT_EQ(a.history_id(), b.history_id());
        a.for_each_stream([&](const std::string& k, const stream& sa) {
            const stream* sb = b.find(k);
            ASSERT_NE(sb, nullptr) << k;
            EXPECT_EQ(sa.incarnation, sb->incarnation);
            EXPECT_EQ(sa.content_type, sb->content_type);
            EXPECT_EQ(sa.closed, sb->closed);
            EXPECT_EQ(sa.last_stream_seq, sb->last_stream_seq);
            EXPECT_EQ(sa.tail(), sb->tail());
            std::vector<byte_slice> xa, xb;
            EXPECT_EQ(sa.bytes.begin_offset(), sb->bytes.begin_offset());
            sa.bytes.read(sa.bytes.begin_offset(), sa.tail(), xa);
            sb->bytes.read(sb->bytes.begin_offset(), sb->tail(), xb);
            std::string ba, bb;
            for (const auto& s : xa) ba.append(s.view());
            for (const auto& s : xb) bb.append(s.view());
            EXPECT_EQ(ba, bb);
            ASSERT_EQ(sa.producers.size(), sb->producers.size());
            for (const auto& [id, pa] : sa.producers) {
                const auto& pb = sb->producers.at(id);
                EXPECT_EQ(pa.epoch, pb.epoch);
                EXPECT_EQ(pa.last_seq, pb.last_seq);
                EXPECT_EQ(pa.last_start, pb.last_start);
                EXPECT_EQ(pa.last_end, pb.last_end);
            }
        });
    }
}

TEST(GroupStateDeterminism, ReplayThroughTheCodecGivesTheSameAnswers) {
    const auto history = random_history(7, 300);
    group_state a;
    group_state b;
    for (std::size_t i = 0; i < history.size(); ++i) {
        auto decoded = decode_command(encode_command(history[i]));
        ASSERT_TRUE(decoded.ok());
        const auto ra = a.apply(command(history[i]), i + 1);
        const auto rb = b.apply(std::move(*decoded), i + 1);
        std::string why;
        ASSERT_TRUE(same_result(ra, rb, why)) << "command " << i << " differs in " << why;
    }
}

}  // namespace
}  // namespace dstream::state

namespace dstream::state {
namespace {

TEST(GroupStateHistory, RewriteGivesEveryStreamANewTokenAndReportsTheOldOne) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "ab")));
    const std::uint64_t before = t.g.find(key)->incarnation;
    t.run(rewrite_history{0x42});
    const stream* s = t.g.find(key);
    EXPECT_NE(s->incarnation, before);
    EXPECT_GE(s->incarnation, std::uint64_t{1} << 52);
    EXPECT_LT(s->incarnation, std::uint64_t{1} << 53);
    EXPECT_EQ(s->previous_incarnation, std::optional<std::uint64_t>(before));
    EXPECT_EQ(s->inherited_offset, 2u);
    EXPECT_EQ(t.g.history_id(), 0x42u);

    // extensions 5.3: the producer's epoch is closed by history at the seq that survived.
    const auto next = t.run(producer_write("p", 0, 1, "cd"));
    expect_refused(next, error_code::producer_epoch_closed);
    EXPECT_EQ(next.producer_outcome, "epoch-closed;by=history");
    EXPECT_EQ(next.closed_epoch, std::optional<std::uint64_t>(0));
    EXPECT_EQ(next.closed_seq, 0u);
    // A repeat of the surviving write still gets its receipt; a claim reopens.
    EXPECT_EQ(t.run(producer_write("p", 0, 0, "ab")).kind, write_kind::repeated);
    expect_ok(t.run(producer_write("p", 1, 0, "cd")));
    EXPECT_EQ(t.bytes(), "abcd");

    // Two rewrites with no write between them name the token before both.
    const std::uint64_t after_first = t.g.find(key)->incarnation;
    t.run(rewrite_history{0x43});
    EXPECT_EQ(t.g.find(key)->previous_incarnation, std::optional<std::uint64_t>(after_first));
    const std::uint64_t second = t.g.find(key)->incarnation;
    t.run(rewrite_history{0x44});
    EXPECT_EQ(t.g.find(key)->previous_incarnation, std::optional<std::uint64_t>(after_first));
    EXPECT_NE(t.g.find(key)->incarnation, second);
}

// base protocol 4.2 with extensions 2.4: a fork names its source's token at
// its creation, which a rewrite of the source's history changes; the source
// is then found by the fork's reference, which the rewrite keeps.
TEST(GroupStateHistory, AForkStillFindsItsSourceAfterTheSourcesHistoryIsRewritten) {
    group t;
    t.run(make_create("text/plain", "abcdef"));
    const std::uint64_t token = t.g.find(key)->incarnation;
    expect_ok(t.run(add_fork_ref{key, token, 3, "bucket/fork", 0x9999}));
    create_stream fork = make_create("text/plain", "", false, {}, std::nullopt, "bucket/fork");
    fork.fork = fork_origin{key, token, 3, 0x9999};
    expect_ok(t.run(fork));

    t.run(rewrite_history{0x5151});
    EXPECT_NE(t.g.find(key)->incarnation, token);
    EXPECT_EQ(t.g.find_source(key, 0x9999), t.g.find(key));  // by the fork's reference
    EXPECT_EQ(t.g.find_source(key, token), nullptr);         // the old token names nothing now

    // The fork's release, naming the token it knew, still drops the reference.
    t.run(drop_fork_ref{key, token, 0x9999});
    EXPECT_TRUE(t.g.find(key)->forks.empty());
    EXPECT_EQ(t.g.find_source(key, 0x9999), nullptr);
}

}  // namespace
}  // namespace dstream::state

namespace dstream::state {
namespace {

// The sealed checkpoint image a backup holds of a group (what a restore carries).
std::string backup_image(const group& t) {
    return sealed_checkpoint_bytes(t.g.capture_checkpoint(0, t.index));
}

TEST(GroupStateRestore, RewindsToTheBackupAsOneRewrite) {
    group t;
    t.run(make_create("text/plain"));
    expect_ok(t.run(producer_write("p", 0, 0, "ab")));
    t.run(make_create("text/plain", "x", false, {}, std::nullopt, "bucket/kept"));
    const std::uint64_t at_backup = t.g.find(key)->incarnation;
    const std::string image = backup_image(t);

    // Writes after the backup: more bytes, a stream created, a stream deleted.
    expect_ok(t.run(producer_write("p", 0, 1, "cd")));
    t.run(make_create("text/plain", "new", false, {}, std::nullopt, "bucket/later"));
    t.run(delete_stream{"bucket/kept", std::nullopt});
    EXPECT_EQ(t.bytes(), "abcd");

    const auto r = t.run(restore_group{0x77, "backup-1", image});
    expect_ok(r);
    EXPECT_TRUE(r.rewrote_history);
    EXPECT_FALSE(r.already_restored);
    EXPECT_EQ(t.g.history_id(), 0x77u);
    EXPECT_EQ(t.bytes(), "ab");
    EXPECT_EQ(t.bytes("bucket/kept"), "x");
    EXPECT_EQ(t.g.find("bucket/later"), nullptr);
    const stream* s = t.g.find(key);
    EXPECT_NE(s->incarnation, at_backup);
    EXPECT_GE(s->incarnation, two52);
    EXPECT_LT(s->incarnation, two53);
    EXPECT_EQ(s->previous_incarnation, std::optional<std::uint64_t>(at_backup));
    EXPECT_EQ(s->inherited_offset, 2u);

    // The report: every stream of either state, in key order.
    ASSERT_EQ(r.rewritten.size(), 3u);
    EXPECT_EQ(r.rewritten[0].key, "bucket/kept");
    EXPECT_FALSE(r.rewritten[0].before.has_value());  // deleted after the backup
    EXPECT_EQ(r.rewritten[1].key, "bucket/later");
    EXPECT_FALSE(r.rewritten[1].incarnation.has_value());  // removed
    EXPECT_EQ(r.rewritten[2].key, key);
    EXPECT_EQ(r.rewritten[2].before, std::optional<std::uint64_t>(at_backup));
    EXPECT_EQ(r.rewritten[2].incarnation, std::optional<std::uint64_t>(s->incarnation));
    EXPECT_EQ(r.rewritten[2].tail, 2u);

    // extensions 5.3: the producer's epoch is closed at the seq that survived;
    // a repeat of the surviving write gets its receipt.
    const auto next = t.run(producer_write("p", 0, 1, "cd"));
    expect_refused(next, error_code::producer_epoch_closed);
    EXPECT_EQ(next.producer_outcome, "epoch-closed;by=history");
    EXPECT_EQ(next.closed_epoch, std::optional<std::uint64_t>(0));
    EXPECT_EQ(next.closed_seq, 0u);
    const auto repeat = t.run(producer_write("p", 0, 0, "ab"));
    EXPECT_EQ(repeat.kind, write_kind::repeated);
    EXPECT_EQ(repeat.start_offset, 0u);
    EXPECT_EQ(repeat.next_offset, 2u);

    // The old token is refused as a precondition.
    append stale = make_append("zz");
    stale.if_incarnation = at_backup;
    expect_refused(t.run(stale), error_code::incarnation_mismatch);
}

TEST(GroupStateRestore, AnotherAttemptOfTheSameRestoreChangesNothing) {
    group t;
    t.run(make_create("text/plain", "ab"));
    const std::string image = backup_image(t);
    t.run(make_append("cd"));
    expect_ok(t.run(restore_group{0x77, "backup-1", image}));
    const std::uint64_t token = t.g.find(key)->incarnation;
    t.run(make_append("ef"));  // a write after the restore stays
    const auto again = t.run(restore_group{0x77, "backup-1", image});
    expect_ok(again);
    EXPECT_TRUE(again.already_restored);
    EXPECT_FALSE(again.rewrote_history);
    EXPECT_EQ(t.g.find(key)->incarnation, token);
    EXPECT_EQ(t.bytes(), "abef");
}

// extensions 2.4, two rewrites: with no write between them the headers name
// the token before both; with a write between them, the token between.
TEST(GroupStateRestore, TwoRewritesFollowTheTwoRewriteRules) {
    group t;
    t.run(make_create("text/plain", "ab"));
    const std::uint64_t original = t.g.find(key)->incarnation;
    const std::string image = backup_image(t);

    // A restore, then an accepted loss with no write between: the token before both.
    expect_ok(t.run(restore_group{0x77, "b1", image}));
    const std::uint64_t restored = t.g.find(key)->incarnation;
    expect_ok(t.run(rewrite_history{0x78}));
    EXPECT_NE(t.g.find(key)->incarnation, restored);
    EXPECT_EQ(t.g.find(key)->previous_incarnation, std::optional<std::uint64_t>(original));
    EXPECT_EQ(t.g.find(key)->inherited_offset, 2u);

    // A write, then another rewrite: the token between the two, with the
    // tail then; a client holding `original` finds no match.
    t.run(make_append("cd"));
    const std::uint64_t between = t.g.find(key)->incarnation;
    expect_ok(t.run(rewrite_history{0x79}));
    EXPECT_EQ(t.g.find(key)->previous_incarnation, std::optional<std::uint64_t>(between));
    EXPECT_EQ(t.g.find(key)->inherited_offset, 4u);

    // A restore names the stream's token in the backup, with the backup's
    // tail (extensions 2.4 note): the bytes below it are those of that token.
    expect_ok(t.run(restore_group{0x80, "b2", image}));
    EXPECT_EQ(t.bytes(), "ab");
    EXPECT_EQ(t.g.find(key)->previous_incarnation, std::optional<std::uint64_t>(original));
    EXPECT_EQ(t.g.find(key)->inherited_offset, 2u);
    EXPECT_NE(t.g.find(key)->incarnation, restored);
}

// The backup's own report is kept when it had not been written since a
// rewrite of its own (extensions 2.4 note).
TEST(GroupStateRestore, ABackupTakenRightAfterARewriteNamesTheTokenBeforeIt) {
    group t;
    t.run(make_create("text/plain", "ab"));
    const std::uint64_t original = t.g.find(key)->incarnation;
    expect_ok(t.run(rewrite_history{0x55}));
    const std::string image = backup_image(t);
    t.run(make_append("cd"));
    expect_ok(t.run(restore_group{0x77, "b", image}));
    EXPECT_EQ(t.g.find(key)->previous_incarnation, std::optional<std::uint64_t>(original));
    EXPECT_EQ(t.g.find(key)->inherited_offset, 2u);
}

TEST(GroupStateRestore, ObjectsOnlyTheReplacedStateHeldAreGarbage) {
    group t;
    t.run(make_create("text/plain", "abcdef"));
    const std::uint64_t inc = t.g.find(key)->incarnation;
    expect_ok(t.run(flush_chunk{key, inc, 0, 2, "chunks/a"}));
    const std::string image = backup_image(t);
    expect_ok(t.run(flush_chunk{key, inc, 2, 4, "chunks/b"}));
    const auto r = t.run(restore_group{0x77, "b", image});
    expect_ok(r);
    EXPECT_EQ(r.garbage_objects, std::vector<std::string>{"chunks/b"});
    ASSERT_EQ(t.g.find(key)->chunks.size(), 1u);
    EXPECT_EQ(t.g.find(key)->chunks[0].object_key, "chunks/a");
    EXPECT_EQ(t.bytes(), "cdef");  // the hot tail, from the backup's image
}

TEST(GroupStateRestore, AnUnreadableImageOrNoHistoryIdIsRefusedAndChangesNothing) {
    group t;
    t.run(make_create("text/plain", "ab"));
    const std::uint64_t token = t.g.find(key)->incarnation;
    std::string image = backup_image(t);
    image[image.size() / 2] ^= 1;
    expect_refused(t.run(restore_group{0x77, "b", image}), error_code::invalid_request);
    expect_refused(t.run(restore_group{0, "b", backup_image(t)}), error_code::invalid_request);
    expect_refused(t.run(rewrite_history{0}), error_code::invalid_request);
    EXPECT_EQ(t.g.find(key)->incarnation, token);
    EXPECT_EQ(t.g.history_id(), 0x1234567890abcdefULL);
}

TEST(GroupStateRestore, AnAcceptedLossReportsEachTokenAndTheTailKept) {
    group t;
    t.run(make_create("text/plain", "abc"));
    const std::uint64_t before = t.g.find(key)->incarnation;
    const auto r = t.run(rewrite_history{0x99});
    expect_ok(r);
    EXPECT_TRUE(r.rewrote_history);
    ASSERT_EQ(r.rewritten.size(), 1u);
    EXPECT_EQ(r.rewritten[0].before, std::optional<std::uint64_t>(before));
    EXPECT_EQ(r.rewritten[0].tail, 3u);
    EXPECT_EQ(r.rewritten[0].incarnation, std::optional<std::uint64_t>(t.g.find(key)->incarnation));
}

}  // namespace
}  // namespace dstream::state

namespace dstream::state {
namespace {

// base protocol 4.2 with extensions 2.4: a fork names its source's token at
// its creation, which a rewrite of the source's history changes; the source
// is then found by the fork's reference, which the rewrite keeps.
TEST(GroupStateRestore, ARestoreKeepsTheForkReferencesOfTheBackup) {
    group t;
    t.run(make_create("text/plain", "abcdef"));
    const std::uint64_t token = t.g.find(key)->incarnation;
    expect_ok(t.run(add_fork_ref{key, token, 3, "bucket/fork", 0x9999}));
    create_stream fork = make_create("text/plain", "", false, {}, std::nullopt, "bucket/fork");
    fork.fork = fork_origin{key, token, 3, 0x9999};
    expect_ok(t.run(fork));
    const std::string image = backup_image(t);
    t.run(drop_fork_ref{key, token, 0x9999});
    EXPECT_EQ(t.g.find_source(key, 0x9999), nullptr);

    expect_ok(t.run(restore_group{0x7171, "b", image}));
    EXPECT_NE(t.g.find(key)->incarnation, token);
    EXPECT_EQ(t.g.find_source(key, 0x9999), t.g.find(key));
    ASSERT_NE(t.g.find("bucket/fork"), nullptr);
    EXPECT_EQ(t.g.find("bucket/fork")->origin->reference, 0x9999u);
}

}  // namespace
}  // namespace dstream::state

namespace dstream::state {
namespace {

// A restore's preparation: the backup's hot tails become cold chunks, and the
// image that references them holds no stream byte.
TEST(GroupStateRestore, HotTailsDetachIntoChunksOfTheSameBytes) {
    group t;
    t.run(make_create("text/plain", "abcdef"));
    t.run(make_create("text/plain", "", false, {}, std::nullopt, "bucket/empty"));
    const std::uint64_t inc = t.g.find(key)->incarnation;
    expect_ok(t.run(flush_chunk{key, inc, 0, 2, "chunks/a"}));
    std::uint32_t g = 0;
    std::uint64_t index = 0;
    auto restored = group_state::restore_checkpoint(backup_image(t), g, index);
    ASSERT_TRUE(restored.ok());
    std::vector<group_state::detached_tail> tails;
    restored->detach_hot_tails(
        [](std::string_view k, const stream& s, std::uint64_t start, std::uint64_t end) {
            return std::string(k) + "/" + std::to_string(s.incarnation) + "/" +
                   std::to_string(start) + "-" + std::to_string(end);
        },
        tails);
    ASSERT_EQ(tails.size(), 1u);  // the empty stream has no tail
    EXPECT_EQ(tails[0].object_key, std::string(key) + "/" + std::to_string(inc) + "/2-6");
    std::string bytes;
    for (const auto& slice : tails[0].bytes) bytes.append(slice.view());
    EXPECT_EQ(bytes, "cdef");
    const stream* s = restored->find(key);
    ASSERT_EQ(s->chunks.size(), 2u);
    EXPECT_EQ(s->chunks[1].start, 2u);
    EXPECT_EQ(s->chunks[1].end, 6u);
    EXPECT_EQ(s->hot_bytes_held(), 0u);
    EXPECT_EQ(s->tail(), 6u);

    // The image that references them restores the same streams, tails held cold.
    const std::string image = sealed_checkpoint_bytes(restored->capture_checkpoint(g, index));
    expect_ok(t.run(restore_group{0x77, "b", image}));
    EXPECT_EQ(t.g.find(key)->tail(), 6u);
    EXPECT_EQ(t.g.find(key)->hot_bytes_held(), 0u);
    EXPECT_EQ(t.g.find(key)->chunks.back().object_key, tails[0].object_key);
    // New bytes go hot after the restored tail.
    expect_ok(t.run(make_append("gh")));
    EXPECT_EQ(t.bytes(), "gh");
    EXPECT_EQ(t.g.find(key)->tail(), 8u);
}

}  // namespace
}  // namespace dstream::state
