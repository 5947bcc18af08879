#pragma once
// A group's disk in the server: the Raft writes (raft_storage), reported on
// the group's strand, and the checkpoints the group saves as the log's
// snapshots. The node's WAL and checkpoint files back it on a durable node,
// memory with --memory.
#include <cstdint>
#include <functional>
#include <string>

#include "base/result.h"
#include "replication/raft_replica.h"
#include "state/group_state.h"

namespace dstream::replication {

class group_disk : public raft_storage {
public:
    // Where the outcome of each write goes: the token of the last write
    // durable (ok), or of a write that failed. Called on the group's strand.
    using reporter = std::function<void(std::uint64_t token, const status& st)>;
    virtual void on_report(reporter report) = 0;
    // Blocking (the I/O pool): writes the snapshot durably, then lets the
    // log go up to its index.
    virtual status save_snapshot(const snapshot_record& record,
                                 const state::checkpoint_image& image) = 0;
};

}  // namespace dstream::replication
