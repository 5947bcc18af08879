#pragma once
// Start-up of a durable node: each group is brought back to where the node
// stopped, from its newest checkpoint and its WAL records after it, and its
// Raft log told what its disk holds.
#include <cstdint>
#include <functional>
#include <vector>

#include "log/checkpoint_files.h"
#include "log/node_wal.h"
#include "replication/raft_replica.h"
#include "service/engine.h"

namespace dstream::cli {

struct recovered_log {
    replication::durable_state state;
    std::uint64_t last_index = 0;   // where the group's WAL records go on
    std::uint64_t checkpoint = 0;   // the index of its newest checkpoint (0: none)
};

// Logs each step, and progress while a large WAL replays; records what it
// cost in node_metrics. `voters_of(group)`: the group's voters. Throws on a
// damaged checkpoint or log.
std::vector<recovered_log> recover(
    service::engine& engine, const log::checkpoint_files& checkpoints, log::node_wal& wal,
    const std::function<std::vector<std::uint64_t>(std::uint32_t group)>& voters_of);

}  // namespace dstream::cli
