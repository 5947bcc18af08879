#pragma once
// What a group's Raft log finds on a durable node's disk at start: the
// newest checkpoint's snapshot metadata, then the group's WAL records in log
// order. A sole voter's durable log is all committed, so its commands are
// applied as they are read (nothing is held in memory) and its log starts
// from what was applied; a group with other voters keeps its entries, which
// commit only once a majority says so. Records of the WAL segments written
// before the log was a Raft log are a sole voter's commands of term 1.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "log/wal_format.h"
#include "replication/raft_records.h"
#include "replication/raft_replica.h"

namespace dstream::replication {

class group_recovery {
public:
    using apply_fn = std::function<void(std::uint64_t index, std::uint64_t term,
                                        std::string_view bytes)>;

    group_recovery(std::uint32_t group, std::vector<std::uint64_t> voters);

    // The newest checkpoint, as of `index`, with its header (none: one
    // written before checkpoints had one).
    void checkpoint(std::uint64_t index, const std::optional<snapshot_header>& header);
    // The group's next WAL record. Throws on one the log cannot take.
    void record(std::uint64_t index, std::string_view payload, log::wal_payloads kind,
                const apply_fn& apply);
    // What the group's log starts from.
    durable_state finish();
    // The last entry index the WAL holds for the group (where its records go on).
    std::uint64_t last_index() const { return _last_index; }
    // Commands applied while reading.
    std::uint64_t applied() const { return _applied; }

private:
    bool sole_voter() const { return _voters.size() == 1; }
    void entry(std::uint64_t index, log_entry e, const apply_fn& apply);

    std::uint32_t _group;
    std::vector<std::uint64_t> _voters;
    std::uint64_t _term = 0;
    std::uint64_t _vote = 0;
    std::optional<snapshot_meta> _snapshot;  // the checkpoint's
    // The log as read: for a sole voter only its end (what was applied).
    std::uint64_t _last_index = 0;
    std::uint64_t _last_term = 0;
    std::uint64_t _configuration_index = 0;
    std::uint64_t _applied = 0;
    std::uint64_t _first = 1;  // of _entries[0]
    std::vector<log_entry> _entries;
};

}  // namespace dstream::replication
