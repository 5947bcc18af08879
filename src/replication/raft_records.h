#pragma once
// The payloads a group's Raft log writes into the node's WAL, in "DSTRWAL3"
// segments (docs/disk-format.md). The WAL record's index is the entry's
// index; for the hard state, the index after the group's last entry then
// (so that a WAL segment holding it is not deleted before a checkpoint that
// holds a hard state at least as new); for an installed snapshot, its index.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "log/wal_format.h"
#include "replication/raft_replica.h"

namespace dstream::replication {

enum class raft_record_kind : std::uint8_t {
    command = 1,        // an entry: u64 term, the encoded command
    barrier = 2,        // an entry: u64 term
    configuration = 3,  // an entry: u64 term, libraft's encoding of the voters
    hard_state = 16,    // u64 term, u64 vote
    snapshot_installed = 17,  // u64 term: the log before it is the snapshot's
};

struct raft_record {
    raft_record_kind kind = raft_record_kind::command;
    std::uint64_t term = 0;
    std::uint64_t vote = 0;   // hard_state
    std::string_view bytes;   // an entry's
};

// The entry's bytes are shared, not copied (log::wal_payload).
log::wal_payload encode_entry_record(const log_entry& entry);
std::string encode_hard_state_record(std::uint64_t term, std::uint64_t vote);
std::string encode_snapshot_installed_record(std::uint64_t term);
result<raft_record> decode_raft_record(std::string_view payload);

// The entry a record holds (an entry kind only).
log_entry entry_of(const raft_record& record);

// A checkpoint's header (log/checkpoint_files.h): the snapshot's metadata
// and the hard state when it was taken.
std::string encode_snapshot_header(const snapshot_meta& meta, std::uint64_t term,
                                   std::uint64_t vote);
struct snapshot_header {
    snapshot_meta meta;
    std::uint64_t term = 0;
    std::uint64_t vote = 0;
};
result<snapshot_header> decode_snapshot_header(std::string_view bytes);

}  // namespace dstream::replication
