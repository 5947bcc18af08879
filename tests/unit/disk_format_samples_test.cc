// Fixed byte samples of the durable formats, written by hand from
// docs/disk-format.md: one field per line, little-endian, and CRC-32s
// computed apart from the code (python3 zlib.crc32) and written as literals.
// The decoders must read each sample into the values the comments name, and
// the encoders must write exactly the sample, so a change of the format
// cannot pass by re-encoding both sides of a round trip: a deliberate change
// updates docs/disk-format.md and these samples together.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "base/file_io.h"
#include "log/checkpoint_files.h"
#include "log/wal_format.h"
#include "replication/raft_records.h"
#include "state/command.h"
#include "state/group_state.h"
#include "temp_dir.h"

namespace dstream {
namespace {

// The bytes of `hex`: pairs of hex digits, spaces between fields ignored.
std::string from_hex(std::string_view hex) {
    std::string out;
    int high = -1;
    for (const char c : hex) {
        if (c == ' ') continue;
        int v = 0;
        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else {
            ADD_FAILURE() << "not a lower-case hex digit: " << c;
            return out;
        }
        if (high < 0) {
            high = v;
        } else {
            out.push_back(static_cast<char>((high << 4) | v));
            high = -1;
        }
    }
    EXPECT_EQ(high, -1) << "an odd number of hex digits";
    return out;
}

std::string to_hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 0xf]);
    }
    return out;
}

// Byte strings compared as hex, so that a mismatch shows where.
#define EXPECT_BYTES(actual, expected) EXPECT_EQ(to_hex(actual), to_hex(expected))

constexpr std::uint64_t incarnation = (std::uint64_t{1} << 52) + 1;  // 01 00 00 00 00 00 10 00
constexpr std::int64_t created_ms = 1700000000123;                     // 7b 68 e5 cf 8b 01 00 00
constexpr std::int64_t appended_ms = 1700000000456;                    // c8 69 e5 cf 8b 01 00 00
constexpr std::int64_t closed_ms = 1700000000789;                      // 15 6b e5 cf 8b 01 00 00

// ---------------------------------------------------------------- commands
// command := u8 version(=2) | u64 now_ms | u8 type | body
// string  := u32 length | bytes;  opt<T> := u8 present(0|1) [T]

// create_stream (type 2): string key, string content_type, opt<u64>
// ttl_seconds, opt<u64> expires_at_ms, u8 closed, string body, opt<u64>
// if_incarnation, opt<fork> fork (version 2 only).
const std::string create_sample = from_hex(
    "02"                              // version 2
    "7b68e5cf8b010000"                // now_ms 1700000000123
    "02"                              // type create_stream
    "06000000 626b742f7331"           // key "bkt/s1"
    "0a000000 746578742f706c61696e"   // content_type "text/plain"
    "01 100e000000000000"             // ttl_seconds 3600
    "00"                              // expires_at_ms absent
    "00"                              // closed 0
    "02000000 6869"                   // body "hi"
    "00"                              // if_incarnation absent
    "00");                            // fork absent

// The same create as a version 1 record wrote it: no fork field.
const std::string create_v1_sample = from_hex(
    "01"                              // version 1
    "7b68e5cf8b010000"                // now_ms
    "02"                              // type create_stream
    "06000000 626b742f7331"           // key "bkt/s1"
    "0a000000 746578742f706c61696e"   // content_type "text/plain"
    "01 100e000000000000"             // ttl_seconds 3600
    "00"                              // expires_at_ms absent
    "00"                              // closed 0
    "02000000 6869"                   // body "hi"
    "00");                            // if_incarnation absent

// append (type 3): string key, string content_type, string body, u8 close,
// opt<string> stream_seq, opt<(string id, u64 epoch, u64 seq, opt<32 bytes>
// digest)> producer, opt<u64> if_incarnation, opt<(u8 error_code, string
// message)> content_fault.
const std::string append_sample = from_hex(
    "02"                              // version 2
    "c869e5cf8b010000"                // now_ms 1700000000456
    "03"                              // type append
    "06000000 626b742f7331"           // key "bkt/s1"
    "0a000000 746578742f706c61696e"   // content_type "text/plain"
    "05000000 68656c6c6f"             // body "hello"
    "00"                              // close 0
    "01 05000000 7365712d31"          // stream_seq "seq-1"
    "01"                              // producer:
    "02000000 7031"                   //   id "p1"
    "0200000000000000"                //   epoch 2
    "0700000000000000"                //   seq 7
    "00"                              //   digest absent
    "01 0100000000001000"             // if_incarnation 2^52 + 1
    "00");                            // content_fault absent

// A close is an append with close = 1 and an empty body.
const std::string close_sample = from_hex(
    "02"                              // version 2
    "156be5cf8b010000"                // now_ms 1700000000789
    "03"                              // type append
    "06000000 626b742f7331"           // key "bkt/s1"
    "00000000"                        // content_type "" (the request named none)
    "00000000"                        // body ""
    "01"                              // close 1
    "00"                              // stream_seq absent
    "00"                              // producer absent
    "00"                              // if_incarnation absent
    "00");                            // content_fault absent

// delete_stream (type 4): string key, opt<u64> if_incarnation.
const std::string delete_sample = from_hex(
    "02"                              // version 2
    "156be5cf8b010000"                // now_ms 1700000000789
    "04"                              // type delete_stream
    "06000000 626b742f7331"           // key "bkt/s1"
    "01 0100000000001000");           // if_incarnation 2^52 + 1

// retain (type 8): string key, opt<u64> if_incarnation, u64 offset,
// opt<(u64 incarnation, u8 message_end)> boundary (version 2 only).
const std::string retain_sample = from_hex(
    "02"                              // version 2
    "156be5cf8b010000"                // now_ms 1700000000789
    "08"                              // type retain
    "06000000 626b742f7331"           // key "bkt/s1"
    "00"                              // if_incarnation absent
    "0500000000000000"                // offset 5
    "01 0100000000001000 01");        // boundary: incarnation 2^52 + 1, message_end 1

state::command decoded(const std::string& bytes) {
    auto cmd = state::decode_command(bytes);
    EXPECT_TRUE(cmd.ok()) << to_hex(bytes);
    return cmd.ok() ? *std::move(cmd) : state::command{};
}

state::create_stream expected_create() {
    state::create_stream c;
    c.key = "bkt/s1";
    c.content_type = "text/plain";
    c.expiry.ttl_seconds = 3600;
    c.body = "hi";
    return c;
}

TEST(disk_format_samples, create_stream_decodes_and_encodes_to_the_sample) {
    const state::command cmd = decoded(create_sample);
    EXPECT_EQ(cmd.now_ms, created_ms);
    const auto* c = std::get_if<state::create_stream>(&cmd.body);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->key, "bkt/s1");
    EXPECT_EQ(c->content_type, "text/plain");
    EXPECT_EQ(c->expiry.ttl_seconds, std::optional<std::uint64_t>(3600));
    EXPECT_FALSE(c->expiry.expires_at.has_value());
    EXPECT_FALSE(c->closed);
    EXPECT_EQ(c->body, "hi");
    EXPECT_FALSE(c->if_incarnation.has_value());
    EXPECT_FALSE(c->fork.has_value());

    EXPECT_BYTES(state::encode_command({created_ms, expected_create()}), create_sample);
}

TEST(disk_format_samples, a_version_1_create_stream_still_decodes_and_is_written_as_version_2) {
    const state::command cmd = decoded(create_v1_sample);
    EXPECT_EQ(cmd.now_ms, created_ms);
    const auto* c = std::get_if<state::create_stream>(&cmd.body);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->key, "bkt/s1");
    EXPECT_EQ(c->expiry.ttl_seconds, std::optional<std::uint64_t>(3600));
    EXPECT_EQ(c->body, "hi");
    EXPECT_FALSE(c->fork.has_value());
    EXPECT_BYTES(state::encode_command(cmd), create_sample);
}

TEST(disk_format_samples, append_decodes_and_encodes_to_the_sample) {
    const state::command cmd = decoded(append_sample);
    EXPECT_EQ(cmd.now_ms, appended_ms);
    const auto* a = std::get_if<state::append>(&cmd.body);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->key, "bkt/s1");
    EXPECT_EQ(a->content_type, "text/plain");
    EXPECT_EQ(a->body, "hello");
    EXPECT_FALSE(a->close);
    EXPECT_EQ(a->stream_seq, std::optional<std::string>("seq-1"));
    ASSERT_TRUE(a->producer.has_value());
    EXPECT_EQ(a->producer->id, "p1");
    EXPECT_EQ(a->producer->epoch, 2u);
    EXPECT_EQ(a->producer->seq, 7u);
    EXPECT_FALSE(a->producer->identity.has_value());
    EXPECT_EQ(a->if_incarnation, std::optional<std::uint64_t>(incarnation));
    EXPECT_FALSE(a->content_fault.has_value());

    state::append expected;
    expected.key = "bkt/s1";
    expected.content_type = "text/plain";
    expected.body = "hello";
    expected.stream_seq = "seq-1";
    expected.producer = state::producer_key{"p1", 2, 7, std::nullopt};
    expected.if_incarnation = incarnation;
    EXPECT_BYTES(state::encode_command({appended_ms, expected}), append_sample);
}

TEST(disk_format_samples, close_decodes_and_encodes_to_the_sample) {
    const state::command cmd = decoded(close_sample);
    EXPECT_EQ(cmd.now_ms, closed_ms);
    const auto* a = std::get_if<state::append>(&cmd.body);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->key, "bkt/s1");
    EXPECT_EQ(a->content_type, "");
    EXPECT_EQ(a->body, "");
    EXPECT_TRUE(a->close);
    EXPECT_FALSE(a->stream_seq.has_value());
    EXPECT_FALSE(a->producer.has_value());
    EXPECT_FALSE(a->if_incarnation.has_value());
    EXPECT_FALSE(a->content_fault.has_value());

    state::append expected;
    expected.key = "bkt/s1";
    expected.close = true;
    EXPECT_BYTES(state::encode_command({closed_ms, expected}), close_sample);
}

TEST(disk_format_samples, delete_stream_decodes_and_encodes_to_the_sample) {
    const state::command cmd = decoded(delete_sample);
    EXPECT_EQ(cmd.now_ms, closed_ms);
    const auto* d = std::get_if<state::delete_stream>(&cmd.body);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->key, "bkt/s1");
    EXPECT_EQ(d->if_incarnation, std::optional<std::uint64_t>(incarnation));
    EXPECT_BYTES(state::encode_command({closed_ms, state::delete_stream{"bkt/s1", incarnation}}),
                 delete_sample);
}

TEST(disk_format_samples, retain_decodes_and_encodes_to_the_sample) {
    const state::command cmd = decoded(retain_sample);
    EXPECT_EQ(cmd.now_ms, closed_ms);
    const auto* r = std::get_if<state::retain>(&cmd.body);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->key, "bkt/s1");
    EXPECT_FALSE(r->if_incarnation.has_value());
    EXPECT_EQ(r->offset, 5u);
    ASSERT_TRUE(r->boundary.has_value());
    EXPECT_EQ(r->boundary->incarnation, incarnation);
    EXPECT_TRUE(r->boundary->message_end);

    state::retain expected;
    expected.key = "bkt/s1";
    expected.offset = 5;
    expected.boundary = state::boundary_check{incarnation, true};
    EXPECT_BYTES(state::encode_command({closed_ms, expected}), retain_sample);
}

TEST(disk_format_samples, a_sample_with_a_byte_more_or_less_does_not_decode) {
    for (const std::string& sample :
         {create_sample, append_sample, close_sample, delete_sample, retain_sample}) {
        EXPECT_FALSE(state::decode_command(sample + '\0').ok()) << to_hex(sample);
        EXPECT_FALSE(state::decode_command(sample.substr(0, sample.size() - 1)).ok())
            << to_hex(sample);
    }
}

// ---------------------------------------------------------------- WAL records
// record := u32 payload_length | u32 crc32 | u32 group | u64 index | payload
// crc32: zlib's CRC-32 over group, index and payload.

// The close command above as the record of group 3 at index 42.
// crc32 = zlib.crc32(bytes.fromhex("03000000" "2a00000000000000") + close_sample)
const std::string close_record_sample = from_hex(
    "21000000"                        // payload_length 33
    "bbe4f2ad"                        // crc32
    "03000000"                        // group 3
    "2a00000000000000")               // index 42
    + close_sample;                   // payload

// A watermark: group 0xffffffff, no payload, index = the segment offset up to
// which the log was durable (here 8: just after the magic).
// crc32 = zlib.crc32(bytes.fromhex("ffffffff" "0800000000000000"))
const std::string watermark_sample = from_hex(
    "00000000"                        // payload_length 0
    "4ae41a2c"                        // crc32
    "ffffffff"                        // group 0xffffffff
    "0800000000000000");              // index 8

TEST(disk_format_samples, a_wal_record_decodes_and_encodes_to_the_sample) {
    ASSERT_EQ(close_record_sample.size(), 20u + 33u);
    log::wal_record record;
    std::size_t consumed = 0;
    ASSERT_EQ(log::decode_wal_record(close_record_sample, record, consumed), log::wal_decode_status::ok);
    EXPECT_EQ(consumed, close_record_sample.size());
    EXPECT_EQ(record.group, 3u);
    EXPECT_EQ(record.index, 42u);
    EXPECT_BYTES(record.payload, close_sample);

    std::string written;
    log::append_wal_record(written, 3, 42, close_sample);
    EXPECT_BYTES(written, close_record_sample);
    const log::wal_record_header head = log::make_wal_record_header(3, 42, close_sample);
    EXPECT_BYTES(std::string_view(head.data(), head.size()),
                 std::string_view(close_record_sample).substr(0, 20));
}

TEST(disk_format_samples, a_watermark_record_decodes_and_encodes_to_the_sample) {
    log::wal_record record;
    std::size_t consumed = 0;
    ASSERT_EQ(log::decode_wal_record(watermark_sample, record, consumed), log::wal_decode_status::ok);
    EXPECT_EQ(consumed, 20u);
    EXPECT_EQ(record.group, log::wal_watermark_group);
    EXPECT_EQ(record.group, 0xffffffffu);
    EXPECT_EQ(record.index, 8u);
    EXPECT_TRUE(record.payload.empty());
    std::string written;
    log::append_wal_record(written, 0xffffffff, 8, {});
    EXPECT_BYTES(written, watermark_sample);
}

// Raft records (DSTRWAL3 segments): payload := u8 kind | u64 term | rest.
// The close command above as the entry (kind 1) of term 7 at index 42 of
// group 3; crc32 = zlib.crc32(group, index, payload).
const std::string raft_entry_record_sample = from_hex(
    "2a000000"                        // payload_length 42
    "cfa718d1"                        // crc32
    "03000000"                        // group 3
    "2a00000000000000"                // index 42
    "01"                              // kind 1: a command entry
    "0700000000000000")               // term 7
    + close_sample;                   // the command

// The hard state (kind 16) of group 3: term 5, vote for node 2, indexed
// after the group's last entry (42).
const std::string hard_state_record_sample = from_hex(
    "11000000"                        // payload_length 17
    "6486b928"                        // crc32
    "03000000"                        // group 3
    "2b00000000000000"                // index 43
    "10"                              // kind 16: hard state
    "0500000000000000"                // term 5
    "0200000000000000");              // vote 2

TEST(disk_format_samples, raft_records_decode_and_encode_to_the_samples) {
    log::wal_record record;
    std::size_t consumed = 0;
    ASSERT_EQ(log::decode_wal_record(raft_entry_record_sample, record, consumed),
              log::wal_decode_status::ok);
    EXPECT_EQ(record.index, 42u);
    auto entry = replication::decode_raft_record(record.payload);
    ASSERT_TRUE(entry.ok());
    EXPECT_EQ(entry->kind, replication::raft_record_kind::command);
    EXPECT_EQ(entry->term, 7u);
    EXPECT_BYTES(entry->bytes, close_sample);
    std::string written;
    log::append_wal_record(written, 3, 42,
                           replication::encode_entry_record({7, replication::entry_kind::command,
                                                             byte_slice::owning(close_sample)})
                               .joined());
    EXPECT_BYTES(written, raft_entry_record_sample);

    ASSERT_EQ(log::decode_wal_record(hard_state_record_sample, record, consumed),
              log::wal_decode_status::ok);
    auto hard = replication::decode_raft_record(record.payload);
    ASSERT_TRUE(hard.ok());
    EXPECT_EQ(hard->kind, replication::raft_record_kind::hard_state);
    EXPECT_EQ(hard->term, 5u);
    EXPECT_EQ(hard->vote, 2u);
    written.clear();
    log::append_wal_record(written, 3, 43, replication::encode_hard_state_record(5, 2));
    EXPECT_BYTES(written, hard_state_record_sample);
}

TEST(disk_format_samples, a_segment_of_the_samples_reads_back_record_by_record) {
    EXPECT_EQ(log::wal_magic, "DSTRWAL3");
    EXPECT_EQ(log::wal_magic_commands, "DSTRWAL2");
    EXPECT_EQ(log::wal_magic_without_watermarks, "DSTRWAL1");
    EXPECT_EQ(log::wal_record_header_bytes, 20u);
    // segment := "DSTRWAL3" batch* zero*;  batch := watermark record*
    const std::string segment =
        "DSTRWAL3" + watermark_sample + raft_entry_record_sample + std::string(16, '\0');
    std::string_view rest = std::string_view(segment).substr(8);
    log::wal_record record;
    std::size_t consumed = 0;
    ASSERT_EQ(log::decode_wal_record(rest, record, consumed), log::wal_decode_status::ok);
    EXPECT_EQ(record.group, log::wal_watermark_group);
    rest.remove_prefix(consumed);
    ASSERT_EQ(log::decode_wal_record(rest, record, consumed), log::wal_decode_status::ok);
    EXPECT_EQ(record.group, 3u);
    EXPECT_EQ(record.index, 42u);
    rest.remove_prefix(consumed);
    // The unused room: zeros are no record (the CRC-32 of zeros is not 0).
    EXPECT_EQ(rest, std::string(16, '\0'));
    EXPECT_NE(log::decode_wal_record(std::string(20, '\0'), record, consumed), log::wal_decode_status::ok);
}

TEST(disk_format_samples, a_wal_record_with_one_bit_flipped_is_corrupt) {
    for (std::size_t i = 4; i < close_record_sample.size(); ++i) {
        std::string damaged = close_record_sample;
        damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
        log::wal_record record;
        std::size_t consumed = 0;
        EXPECT_EQ(log::decode_wal_record(damaged, record, consumed), log::wal_decode_status::corrupt)
            << "byte " << i;
    }
}

// ---------------------------------------------------------------- checkpoints
// checkpoint := "DSTRCKP3" u32 group | u64 index | u64 history_id |
//               u64 applied_now_ms | u64 stream_count stream* |
//               u32 crc32(everything before it)
// A DSTRCKP2 checkpoint has no applied_now_ms; it still restores.

// One closed stream with a stream sequence, an inline snapshot, one producer
// and seven hot bytes, no forks, no cold chunks.
// crc32 = zlib.crc32(every byte of the sample before it)
const std::string checkpoint_v2_sample = from_hex(
    "4453545243 4b5032"               // "DSTRCKP2"
    "03000000"                        // group 3
    "2a00000000000000"                // index 42
    "efcdab8967452301"                // history_id 0x0123456789abcdef
    "0100000000000000"                // stream_count 1
    // stream
    "06000000 626b742f7331"           // key "bkt/s1"
    "00"                              // retired 0
    "00"                              // origin absent
    "0000000000000000"                // forks: n = 0
    "0a000000 746578742f706c61696e"   // content_type "text/plain"
    "01 100e000000000000"             // ttl 3600
    "00"                              // expires_at_ms absent
    "0100000000001000"                // incarnation 2^52 + 1
    "7b68e5cf8b010000"                // created_at_ms 1700000000123
    "c869e5cf8b010000"                // last_write_ms 1700000000456
    "01"                              // closed 1
    "01 05000000 7365712d31"          // last_stream_seq "seq-1"
    "00"                              // previous_incarnation absent
    "0000000000000000"                // inherited_offset 0
    "0000000000000000"                // retained 0
    "01"                              // has_snapshot 1:
    "0200000000000000"                //   offset 2
    "0a000000 746578742f706c61696e"   //   content_type "text/plain"
    "000102030405060708090a0b0c0d0e0f"
    "101112131415161718191a1b1c1d1e1f"  //   digest 00 01 .. 1f
    "0200000000000000"                //   size 2
    "02000000 6869"                   //   inline_body "hi"
    "00000000"                        //   object_key ""
    "00"                              // epoch_floor absent
    "0100000000000000"                // producers: n = 1
    "02000000 7031"                   //   producer_id "p1"
    "0200000000000000"                //   epoch 2
    "0700000000000000"                //   last_seq 7
    "0200000000000000"                //   last_start 2
    "0700000000000000"                //   last_end 7
    "00"                              //   last_closed 0
    "00"                              //   last_identity absent
    "00"                              //   claim_identity absent
    "00"                              //   closed_epoch absent
    "0000000000000000"                //   closed_seq 0
    "c869e5cf8b010000"                //   last_write_ms 1700000000456
    "01"                              //   above_floor 1
    "00"                              //   closed_by_history 0
    "0000000000000000"                // cold chunks: n = 0
    "0000000000000000"                // hot_start 0
    "0700000000000000"                // hot_length 7
    "686968656c6c6f"                  // the hot tail "hihello"
    "4f860b58");                      // crc32

// The same state as DSTRCKP3, applied up to 1700000000789 ms.
const std::string checkpoint_sample =
    from_hex("4453545243 4b5033"       // "DSTRCKP3"
             "03000000"                // group 3
             "2a00000000000000"        // index 42
             "efcdab8967452301"        // history_id
             "156be5cf8b010000")       // applied_now_ms 1700000000789
    + checkpoint_v2_sample.substr(28, checkpoint_v2_sample.size() - 32)  // stream_count, the stream
    + from_hex("ed9def48");            // crc32

// A checkpoint file: the log's header, then the state's image.
// file := "DSTRSNP1" u32 header_length | header | u32 crc32(header) | checkpoint
// header := u8 version(1) | u64 index | u64 term | u64 configuration_index |
//           u32 n | u64 voter*n | u64 hard_term | u64 hard_vote
const std::string snapshot_header_sample = from_hex(
    "01"                              // version 1
    "2a00000000000000"                // index 42
    "0700000000000000"                // term 7
    "0100000000000000"                // configuration_index 1
    "01000000"                        // one voter:
    "0100000000000000"                //   node 1
    "0700000000000000"                // hard_term 7
    "0100000000000000");              // hard_vote 1

TEST(disk_format_samples, a_snapshot_header_decodes_and_encodes_to_the_sample) {
    auto header = replication::decode_snapshot_header(snapshot_header_sample);
    ASSERT_TRUE(header.ok());
    EXPECT_EQ(header->meta.index, 42u);
    EXPECT_EQ(header->meta.term, 7u);
    EXPECT_EQ(header->meta.configuration_index, 1u);
    EXPECT_EQ(header->meta.voters, std::vector<std::uint64_t>{1});
    EXPECT_EQ(header->term, 7u);
    EXPECT_EQ(header->vote, 1u);
    EXPECT_BYTES(replication::encode_snapshot_header(header->meta, 7, 1), snapshot_header_sample);
}

TEST(disk_format_samples, a_checkpoint_file_is_the_header_then_the_image) {
    test::temp_dir dir{"dstream-format-samples"};
    log::checkpoint_files files(dir.path());
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    auto restored = state::group_state::restore_checkpoint(checkpoint_sample, group, index);
    ASSERT_TRUE(restored.ok()) << restored.err().message;
    ASSERT_TRUE(files.write(3, 42, snapshot_header_sample, restored->capture_checkpoint(3, 42)));
    const auto newest = files.newest();
    ASSERT_EQ(newest.count(3), 1u);
    std::string bytes;
    ASSERT_TRUE(read_all(posix_file_io(), newest.at(3).path.c_str(), bytes));
    const std::string expected = "DSTRSNP1" + from_hex("35000000") + snapshot_header_sample +
                                 from_hex("ff71f5ea") + checkpoint_sample;
    EXPECT_BYTES(bytes, expected);
}

std::string checkpoint_file(const state::checkpoint_image& image) {
    std::string bytes;
    for (const auto& piece : image.pieces) bytes.append(piece.view());
    return bytes;
}

TEST(disk_format_samples, a_checkpoint_restores_into_the_sample_values) {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    auto restored = state::group_state::restore_checkpoint(checkpoint_sample, group, index);
    ASSERT_TRUE(restored.ok()) << restored.err().message;
    EXPECT_EQ(group, 3u);
    EXPECT_EQ(index, 42u);
    EXPECT_EQ(restored->history_id(), 0x0123456789abcdefu);
    EXPECT_EQ(restored->stream_count(), 1u);
    const state::stream* s = restored->find("bkt/s1");
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(restored->retired("bkt/s1"));
    EXPECT_FALSE(s->origin.has_value());
    EXPECT_TRUE(s->forks.empty());
    EXPECT_EQ(s->content_type, "text/plain");
    EXPECT_FALSE(s->json);
    EXPECT_EQ(s->expiry.ttl_seconds, std::optional<std::uint64_t>(3600));
    EXPECT_FALSE(s->expiry.expires_at.has_value());
    EXPECT_EQ(s->incarnation, incarnation);
    EXPECT_EQ(s->created_at_ms, created_ms);
    EXPECT_EQ(s->last_write_ms, appended_ms);
    EXPECT_TRUE(s->closed);
    EXPECT_EQ(s->last_stream_seq, std::optional<std::string>("seq-1"));
    EXPECT_FALSE(s->previous_incarnation.has_value());
    EXPECT_EQ(s->inherited_offset, 0u);
    EXPECT_EQ(s->retained, 0u);
    ASSERT_TRUE(s->snapshot.has_value());
    EXPECT_EQ(s->snapshot->offset, 2u);
    EXPECT_EQ(s->snapshot->content_type, "text/plain");
    for (std::size_t i = 0; i < s->snapshot->digest.size(); ++i) EXPECT_EQ(s->snapshot->digest[i], i);
    EXPECT_EQ(s->snapshot->size, 2u);
    EXPECT_EQ(s->snapshot->inline_body, "hi");
    EXPECT_EQ(s->snapshot->object_key, "");
    EXPECT_FALSE(s->epoch_floor.has_value());
    ASSERT_EQ(s->producers.size(), 1u);
    const auto& p = s->producers.at("p1");
    EXPECT_EQ(p.epoch, 2u);
    EXPECT_EQ(p.last_seq, 7u);
    EXPECT_EQ(p.last_start, 2u);
    EXPECT_EQ(p.last_end, 7u);
    EXPECT_FALSE(p.last_closed);
    EXPECT_FALSE(p.last_identity.has_value());
    EXPECT_FALSE(p.claim_identity.has_value());
    EXPECT_FALSE(p.closed_epoch.has_value());
    EXPECT_EQ(p.closed_seq, 0u);
    EXPECT_EQ(p.last_write_ms, appended_ms);
    EXPECT_TRUE(p.above_floor);
    EXPECT_FALSE(p.closed_by_history);
    EXPECT_TRUE(s->chunks.empty());
    EXPECT_EQ(s->tail(), 7u);
    std::vector<byte_slice> hot;
    EXPECT_EQ(s->bytes.read(0, 7, hot), 7u);
    std::string tail;
    for (const auto& slice : hot) tail.append(slice.view());
    EXPECT_EQ(tail, "hihello");
}

TEST(disk_format_samples, a_restored_checkpoint_is_captured_as_the_sample_bytes) {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    auto restored = state::group_state::restore_checkpoint(checkpoint_sample, group, index);
    ASSERT_TRUE(restored.ok()) << restored.err().message;
    // The writer (log/checkpoint_files) appends the CRC-32 trailer to the image.
    const std::string captured = checkpoint_file(restored->capture_checkpoint(3, 42));
    EXPECT_BYTES(captured, std::string_view(checkpoint_sample).substr(0, checkpoint_sample.size() - 4));
}

TEST(disk_format_samples, a_version_2_checkpoint_restores_with_its_latest_time_as_applied) {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    auto restored = state::group_state::restore_checkpoint(checkpoint_v2_sample, group, index);
    ASSERT_TRUE(restored.ok()) << restored.err().message;
    EXPECT_EQ(index, 42u);
    EXPECT_EQ(restored->applied_now(), appended_ms);
    // It is written again as the version of today.
    EXPECT_BYTES(checkpoint_file(restored->capture_checkpoint(3, 42)).substr(0, 8), "DSTRCKP3");
}

TEST(disk_format_samples, a_checkpoint_with_one_byte_changed_fails_its_checksum) {
    for (const std::size_t at : {std::size_t{8}, std::size_t{40}, checkpoint_sample.size() - 8,
                                 checkpoint_sample.size() - 1}) {
        std::string damaged = checkpoint_sample;
        damaged[at] = static_cast<char>(damaged[at] ^ 0x01);
        std::uint32_t group = 0;
        std::uint64_t index = 0;
        EXPECT_FALSE(state::group_state::restore_checkpoint(damaged, group, index).ok()) << "byte " << at;
    }
}

}  // namespace
}  // namespace dstream
