#pragma once
// The byte format of write-ahead log segments (docs/disk-format.md).
//
// A segment starts with an 8-byte magic. Then records:
//   u32 payload_length | u32 crc32 | u32 group | u64 index | payload
// little-endian; crc32 (zlib's CRC-32) covers group, index and payload.
// In a "DSTRWAL3" or "DSTRWAL2" segment every batch of records written at
// once begins with a watermark: a record of group wal_watermark_group, no
// payload, whose index is the segment offset up to which the log was durable
// when the batch was written. A "DSTRWAL1" segment promises no watermarks.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/byte_slice.h"

namespace dstream::log {

// The segments this version writes: watermarked batches of Raft records.
inline constexpr std::string_view wal_magic = "DSTRWAL3";
// Older segments, still read: watermarked batches of commands, and commands
// without watermarks. Every magic has the same length.
inline constexpr std::string_view wal_magic_commands = "DSTRWAL2";
inline constexpr std::string_view wal_magic_without_watermarks = "DSTRWAL1";

// What a segment's payloads are: a group's Raft records
// (replication/raft_records.h), or the commands a group's log held before
// it was a Raft log (state/command.h), each at its index.
enum class wal_payloads { raft_records, commands };
inline constexpr std::uint32_t wal_watermark_group = 0xffffffff;
inline constexpr std::size_t wal_record_header_bytes = 20;
// A record never exceeds this: the largest command is a 32 MiB body plus headers.
inline constexpr std::uint32_t wal_max_payload_bytes = 64u << 20;

struct wal_record {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    std::string_view payload;
};

void append_wal_record(std::string& out, std::uint32_t group, std::uint64_t index,
                       std::string_view payload);

// A payload as it is submitted: bytes of its own, then bytes it shares (a
// Raft entry's, which the log and the messages to followers hold too),
// written from where they are. On disk the two are one payload.
struct wal_payload {
    wal_payload(std::string bytes) : own(std::move(bytes)) {}  // NOLINT: bytes of its own are a payload
    wal_payload(const char* bytes) : own(bytes) {}             // NOLINT: as a string
    wal_payload(std::string bytes, byte_slice entry_bytes)
        : own(std::move(bytes)), shared(std::move(entry_bytes)) {}
    std::string own;
    byte_slice shared;
    std::size_t size() const { return own.size() + shared.size; }
    // The payload as it is on disk.
    std::string joined() const { return own + std::string(shared.view()); }
};

// The header alone; the payload (`payload`, then `rest`) follows it in the file.
using wal_record_header = std::array<char, wal_record_header_bytes>;
wal_record_header make_wal_record_header(std::uint32_t group, std::uint64_t index,
                                         std::string_view payload, std::string_view rest = {});

enum class wal_decode_status {
    ok,
    truncated,  // the bytes end inside the record
    corrupt,    // a length out of bounds or a checksum mismatch
};

// Decodes the record at the start of `in`; on ok, `consumed` is its size.
wal_decode_status decode_wal_record(std::string_view in, wal_record& record, std::size_t& consumed);

}  // namespace dstream::log
