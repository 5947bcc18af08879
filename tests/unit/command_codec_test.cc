#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "state/command.h"

namespace dstream::state {
namespace {

using protocol::error_code;
using namespace std::string_literals;

// ------------------------------------------------------------- comparison

void expect_same(const init_group& a, const init_group& b) {
    EXPECT_EQ(a.history_id, b.history_id);
}

void expect_same(const create_stream& a, const create_stream& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.content_type, b.content_type);
    EXPECT_EQ(a.expiry, b.expiry);
    EXPECT_EQ(a.closed, b.closed);
    EXPECT_EQ(a.body, b.body);
    EXPECT_EQ(a.if_incarnation, b.if_incarnation);
    ASSERT_EQ(a.fork.has_value(), b.fork.has_value());
    if (a.fork) {
        EXPECT_TRUE(a.fork->same_point(*b.fork));
        EXPECT_EQ(a.fork->reference, b.fork->reference);
    }
}

void expect_same(const add_fork_ref& a, const add_fork_ref& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.incarnation, b.incarnation);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.fork_key, b.fork_key);
    EXPECT_EQ(a.reference, b.reference);
}

void expect_same(const drop_fork_ref& a, const drop_fork_ref& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.incarnation, b.incarnation);
    EXPECT_EQ(a.reference, b.reference);
}

void expect_same(const append& a, const append& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.content_type, b.content_type);
    EXPECT_EQ(a.body, b.body);
    EXPECT_EQ(a.close, b.close);
    EXPECT_EQ(a.stream_seq, b.stream_seq);
    EXPECT_EQ(a.producer, b.producer);
    EXPECT_EQ(a.if_incarnation, b.if_incarnation);
    ASSERT_EQ(a.content_fault.has_value(), b.content_fault.has_value());
    if (a.content_fault) {
        EXPECT_EQ(a.content_fault->code, b.content_fault->code);
        EXPECT_EQ(a.content_fault->message, b.content_fault->message);
    }
}

void expect_same(const delete_stream& a, const delete_stream& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.if_incarnation, b.if_incarnation);
}

void expect_same(const expire_stream& a, const expire_stream& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.incarnation, b.incarnation);
}

void expect_same(const flush_chunk& a, const flush_chunk& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.incarnation, b.incarnation);
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.object_key, b.object_key);
}

void expect_same(const publish_snapshot& a, const publish_snapshot& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.if_incarnation, b.if_incarnation);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.content_type, b.content_type);
    EXPECT_EQ(a.digest, b.digest);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.body, b.body);
    EXPECT_EQ(a.object_key, b.object_key);
    EXPECT_EQ(a.boundary, b.boundary);
}

void expect_same(const retain& a, const retain& b) {
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.if_incarnation, b.if_incarnation);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.boundary, b.boundary);
}

void expect_same(const rewrite_history& a, const rewrite_history& b) {
    EXPECT_EQ(a.history_id, b.history_id);
}

void expect_same(const restore_group& a, const restore_group& b) {
    EXPECT_EQ(a.history_id, b.history_id);
    EXPECT_EQ(a.backup_id, b.backup_id);
    EXPECT_EQ(a.image, b.image);
}

void expect_same(const command& a, const command& b) {
    EXPECT_EQ(a.now_ms, b.now_ms);
    ASSERT_EQ(a.body.index(), b.body.index());
    std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            expect_same(x, std::get<T>(b.body));
        },
        a.body);
}

// ------------------------------------------------------------- fixtures

struct named_command {
    const char* name;
    command cmd;
};

std::vector<named_command> sample_commands() {
    std::vector<named_command> out;
    out.push_back({"init", command{1700000000000, init_group{0xdeadbeefcafef00dULL}}});
    out.push_back({"init zero", command{0, init_group{0}}});

    create_stream c1;
    c1.key = "bucket/stream";
    c1.content_type = "application/json";
    c1.body = "{\"a\":1}\n";
    out.push_back({"create minimal", command{42, c1}});

    create_stream c2;
    c2.key = "v1/stream/x";
    c2.content_type = "text/plain; charset=utf-8";
    c2.expiry.ttl_seconds = 3600;
    c2.closed = true;
    c2.body = "bytes\0with\xffnul"s;
    c2.if_incarnation = (1ULL << 52) + 17;
    out.push_back({"create ttl closed incarnation", command{-5, c2}});

    create_stream c3;
    c3.key = "k";
    c3.expiry.expires_at = -2208988800000;  // negative instant
    out.push_back({"create expires-at negative", command{INT64_MAX, c3}});

    create_stream c4;
    c4.key = "v1/stream/fork";
    c4.content_type = "text/plain";
    c4.body = "own";
    c4.fork = fork_origin{"v1/stream/source", (1ULL << 52) + 9, 5, 0xfeedfacecafebeefULL};
    out.push_back({"create fork", command{43, c4}});
    out.push_back(
        {"add fork reference",
         command{44, add_fork_ref{"v1/stream/source", (1ULL << 52) + 9, 5, "v1/stream/fork", 77}}});
    out.push_back(
        {"drop fork reference", command{45, drop_fork_ref{"v1/stream/source", 1, UINT64_MAX}}});

    append a1;
    a1.key = "bucket/stream";
    a1.content_type = "application/octet-stream";
    a1.body = std::string(70000, 'z');
    out.push_back({"append plain", command{7, a1}});

    append a2;
    a2.key = "bucket/stream";
    a2.close = true;
    a2.stream_seq = "000042";
    a2.producer = producer_key{"producer-1", 3, 9007199254740991ULL};
    a2.if_incarnation = 4503599627370496ULL;
    out.push_back({"append close seq producer incarnation", command{8, a2}});

    append a3;
    a3.key = "b/s";
    a3.content_type = "application/json";
    a3.producer = producer_key{"", 0, 0};
    a3.stream_seq = "";
    a3.content_fault = make_error(error_code::not_json_boundary, "bad json at byte 3");
    out.push_back({"append content fault", command{INT64_MIN, a3}});

    append a4;
    a4.key = "b/s";
    a4.content_fault = make_error(error_code::empty_append, "");
    out.push_back({"append content fault without producer", command{9, a4}});

    delete_stream d1;
    d1.key = "bucket/stream";
    out.push_back({"delete", command{10, d1}});
    delete_stream d2;
    d2.key = "bucket/stream";
    d2.if_incarnation = 0;
    out.push_back({"delete with incarnation 0", command{11, d2}});

    out.push_back({"expire", command{12, expire_stream{"bucket/stream", (1ULL << 53) - 1}}});

    flush_chunk f;
    f.key = "bucket/stream";
    f.incarnation = (1ULL << 52) + 3;
    f.start = 4194304;
    f.end = 8388608;
    f.object_key = "chunks/bucket/stream/00000000000004194304";
    out.push_back({"flush chunk", command{13, f}});
    out.push_back({"flush chunk empty key", command{14, flush_chunk{}}});

    append digested;
    digested.key = "b/s";
    digested.producer = producer_key{"p", 1, 2, std::nullopt};
    digested.producer->identity.emplace();
    digested.producer->identity->fill(0x5a);
    out.push_back({"append with producer digest", command{15, digested}});

    publish_snapshot p1;
    p1.key = "b/s";
    p1.if_incarnation = (1ULL << 52) + 3;
    p1.offset = 4096;
    p1.content_type = "application/x-crdt";
    p1.digest.fill(0x11);
    p1.size = 5;
    p1.body = "state";
    out.push_back({"publish inline", command{16, p1}});

    publish_snapshot p2;
    p2.key = "b/s";
    p2.offset = 1 << 20;
    p2.size = 3u << 20;
    p2.object_key = "snapshots/ab/cd/1/00000000000001048576-ffff";
    out.push_back({"publish object", command{17, p2}});

    out.push_back({"retain", command{18, retain{"b/s", std::nullopt, 123, std::nullopt}}});
    out.push_back({"retain with a boundary read",
                   command{20, retain{"b/s", 7, 123, boundary_check{1ULL << 52, true}}}});
    p2.boundary = boundary_check{(1ULL << 52) + 1, false};
    out.push_back({"publish object with a boundary read", command{21, p2}});
    out.push_back({"rewrite history", command{19, rewrite_history{0x0123456789abcdefULL}}});
    out.push_back({"restore a group",
                   command{22, restore_group{0x0fedcba987654321ULL, "0123abcd",
                                             std::string("DSTRCKP3\0\x01image", 17)}}});
    return out;
}

// ------------------------------------------------------------- tests

TEST(CommandCodec, EveryCommandTypeRoundTrips) {
    bool seen[std::variant_size_v<command_body>] = {};
    for (const auto& [name, cmd] : sample_commands()) {
        SCOPED_TRACE(name);
        seen[cmd.body.index()] = true;
        const std::string bytes = encode_command(cmd);
        const auto decoded = decode_command(bytes);
        ASSERT_TRUE(decoded.ok()) << decoded.err().message;
        expect_same(cmd, *decoded);
        // Canonical: re-encoding gives the same bytes.
        EXPECT_EQ(encode_command(*decoded), bytes);
    }
    for (std::size_t i = 0; i < std::variant_size_v<command_body>; ++i) {
        EXPECT_TRUE(seen[i]) << "no sample for command alternative " << i;
    }
}

TEST(CommandCodec, LayoutStartsWithVersionClockAndStableTypeCode) {
    const struct {
        command cmd;
        std::uint8_t type;
    } rows[] = {
        {command{0x0102030405060708LL, init_group{1}}, 1},
        {command{0x0102030405060708LL, create_stream{}}, 2},
        {command{0x0102030405060708LL, append{}}, 3},
        {command{0x0102030405060708LL, delete_stream{}}, 4},
        {command{0x0102030405060708LL, expire_stream{}}, 5},
        {command{0x0102030405060708LL, flush_chunk{}}, 6},
    };
    for (const auto& r : rows) {
        const std::string bytes = encode_command(r.cmd);
        ASSERT_GE(bytes.size(), 10u);
        EXPECT_EQ(static_cast<std::uint8_t>(bytes[0]), 2);  // codec version
        // now_ms, little-endian.
        EXPECT_EQ(bytes.substr(1, 8), "\x08\x07\x06\x05\x04\x03\x02\x01"s);
        EXPECT_EQ(static_cast<std::uint8_t>(bytes[9]), r.type);
    }
    EXPECT_EQ(static_cast<int>(command_type::init_group), 1);
    EXPECT_EQ(static_cast<int>(command_type::create_stream), 2);
    EXPECT_EQ(static_cast<int>(command_type::append), 3);
    EXPECT_EQ(static_cast<int>(command_type::delete_stream), 4);
    EXPECT_EQ(static_cast<int>(command_type::expire_stream), 5);
    EXPECT_EQ(static_cast<int>(command_type::flush_chunk), 6);
    EXPECT_EQ(static_cast<int>(command_type::add_fork_ref), 10);
    EXPECT_EQ(static_cast<int>(command_type::drop_fork_ref), 11);
    EXPECT_EQ(static_cast<int>(command_type::restore_group), 12);
}

TEST(CommandCodec, VersionOneCreateRecordsStillDecode) {
    // A version 1 create is a version 2 create without its fork flag.
    create_stream c;
    c.key = "b/s";
    c.content_type = "text/plain";
    c.body = "abc";
    std::string bytes = encode_command(command{5, c});
    ASSERT_EQ(bytes.back(), '\0');
    bytes.pop_back();
    bytes[0] = 1;
    const auto decoded = decode_command(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.err().message;
    expect_same(command{5, c}, *decoded);
    bytes[0] = 3;  // a version from the future
    EXPECT_FALSE(decode_command(bytes).ok());
}

TEST(CommandCodec, EveryTruncationIsAnError) {
    for (const auto& [name, cmd] : sample_commands()) {
        SCOPED_TRACE(name);
        const std::string bytes = encode_command(cmd);
        for (std::size_t n = 0; n < bytes.size(); ++n) {
            const auto r = decode_command(std::string_view(bytes).substr(0, n));
            ASSERT_FALSE(r.ok()) << "prefix of " << n << " of " << bytes.size() << " bytes decoded";
        }
    }
}

TEST(CommandCodec, TrailingBytesAreAnError) {
    for (const auto& [name, cmd] : sample_commands()) {
        SCOPED_TRACE(name);
        const std::string bytes = encode_command(cmd);
        for (const std::string& tail : {"\0"s, "x"s, "\x01\x02\x03"s}) {
            const auto r = decode_command(bytes + tail);
            ASSERT_FALSE(r.ok());
            EXPECT_EQ(r.err().code, error_code::internal);
        }
    }
}

// Versions this build does not know (1 is known: VersionOneCreateRecordsStillDecode).
TEST(CommandCodec, WrongVersionIsAnError) {
    for (const auto& [name, cmd] : sample_commands()) {
        SCOPED_TRACE(name);
        std::string bytes = encode_command(cmd);
        for (unsigned char v : {0, 3, 0x81, 0xff}) {
            bytes[0] = static_cast<char>(v);
            EXPECT_FALSE(decode_command(bytes).ok()) << "version " << static_cast<int>(v);
        }
    }
}

TEST(CommandCodec, UnknownTypeCodeIsAnError) {
    std::string bytes = encode_command(command{1, expire_stream{"k", 1}});
    for (unsigned char t : {0, 0x7f, 0xfe, 0xff}) {
        bytes[9] = static_cast<char>(t);
        EXPECT_FALSE(decode_command(bytes).ok()) << "type " << static_cast<int>(t);
    }
}

TEST(CommandCodec, BooleanFlagsOtherThanZeroOrOneAreErrors) {
    create_stream c;
    c.key = "k";
    std::string bytes = encode_command(command{1, c});
    // version(1) now(8) type(1) key(4+1) ct(4+0) ttl?(1) expires?(1) closed(1)
    const std::size_t closed_at = 1 + 8 + 1 + 5 + 4 + 1 + 1;
    ASSERT_EQ(bytes[closed_at], '\0');
    bytes[closed_at] = '\x02';
    EXPECT_FALSE(decode_command(bytes).ok());
}

TEST(CommandCodec, StringLengthBeyondInputIsAnError) {
    delete_stream d;
    d.key = "abc";
    std::string bytes = encode_command(command{1, d});
    // The key length is the u32 right after the type byte.
    bytes[10] = '\xff';
    bytes[11] = '\xff';
    bytes[12] = '\xff';
    bytes[13] = '\xff';
    EXPECT_FALSE(decode_command(bytes).ok());
}

TEST(CommandCodec, EmptyInputIsAnError) { EXPECT_FALSE(decode_command("").ok()); }

TEST(CommandCodec, OptionalPresenceByteOtherThanZeroOrOneIsAnError) {
    delete_stream d;
    d.key = "k";
    d.if_incarnation = 5;
    std::string bytes = encode_command(command{1, d});
    const std::size_t presence_at = 1 + 8 + 1 + 4 + 1;
    ASSERT_EQ(bytes[presence_at], '\x01');
    bytes[presence_at] = '\x02';
    EXPECT_FALSE(decode_command(bytes).ok());
}

TEST(CommandCodec, UnknownContentFaultErrorCodeIsAnError) {
    append a;
    a.key = "k";
    a.content_fault = make_error(error_code::empty_append, "m");
    std::string bytes = encode_command(command{1, a});
    // The fault code byte sits right before the message string (u32 len + "m").
    const std::size_t code_at = bytes.size() - 1 - 4 - 1;
    ASSERT_EQ(static_cast<std::uint8_t>(bytes[code_at]),
              static_cast<std::uint8_t>(error_code::empty_append));
    bytes[code_at] = '\xff';
    EXPECT_FALSE(decode_command(bytes).ok());
}

}  // namespace
}  // namespace dstream::state
