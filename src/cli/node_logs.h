#pragma once
// The logs of a node's groups: on a single node every group a one-voter Raft
// log (src/replication), on the node's WAL and checkpoints, or in memory with
// --memory; in a cluster, a replica of each group the node hosts, with the
// placement's voters, over the peer transport. The composition `dstream
// serve` makes, and the tests that start a node in-process.
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "cli/cluster_node.h"
#include "cli/recovery.h"
#include "log/checkpoint_files.h"
#include "log/node_wal.h"
#include "replication/raft_replica.h"
#include "service/engine.h"
#include "storage/object_store.h"

namespace dstream::cli {

// This node (id 1) as the only voter of every group.
replication::raft_options single_node_raft();
// The voters of a single node's groups.
std::vector<std::uint64_t> single_node_voters(std::uint32_t group);

// `recovered` (from recover()) is consumed: each group's log starts from it.
// The logs post blocking snapshot writes to `io`. With `cluster`, groups the
// node does not host get no log, and the snapshots replicas send each other
// go by way of `cold` (the cluster's shared object store).
struct cluster_logs {
    cluster_node* node = nullptr;
    storage::object_store* cold = nullptr;
};
service::log_factory wal_logs(log::node_wal& wal, log::checkpoint_files& checkpoints,
                              boost::asio::any_io_executor io,
                              std::vector<recovered_log>& recovered, cluster_logs cluster = {});
service::log_factory memory_logs(boost::asio::any_io_executor io);

// After the WAL started: drops what each group's checkpoint covers.
void release_checkpointed(log::node_wal& wal, const std::vector<recovered_log>& recovered);

}  // namespace dstream::cli
