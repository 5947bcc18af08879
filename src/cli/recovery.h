#pragma once
// Start-up of a durable node: the engine is brought back to where the node
// stopped, from the newest checkpoints and the WAL records after them.
#include <cstdint>
#include <vector>

#include "log/checkpoint_files.h"
#include "log/node_wal.h"
#include "service/engine.h"

namespace dstream::cli {

// Logs each step, and progress while a large WAL replays; records what it
// cost in node_metrics. Returns each group's last log index, where its log
// continues. Throws on a damaged checkpoint or log.
std::vector<std::uint64_t> recover(service::engine& engine,
                                   const log::checkpoint_files& checkpoints, log::node_wal& wal);

}  // namespace dstream::cli
