#include "cli/node_logs.h"

#include <fmt/format.h>

#include "replication/memory_group_disk.h"
#include "replication/raft_group_log.h"
#include "replication/wal_group_disk.h"
#include "runtime/random.h"

namespace dstream::cli {
namespace {

// No group of a single node sends a message.
replication::no_peers& peers() {
    static replication::no_peers instance;
    return instance;
}

replication::raft_group_log::setup setup_of(std::size_t group, const service::group_strand& strand,
                                            boost::asio::any_io_executor io) {
    replication::raft_group_log::setup s;
    s.group = static_cast<std::uint32_t>(group);
    s.raft = single_node_raft();
    s.strand = strand;
    s.io = std::move(io);
    return s;
}

}  // namespace

replication::raft_options single_node_raft() {
    replication::raft_options o;
    o.node = 1;
    o.voters = {1};
    o.seed = runtime::system_random().next();
    return o;
}

std::vector<std::uint64_t> single_node_voters(std::uint32_t /*group*/) { return {1}; }

service::log_factory wal_logs(log::node_wal& wal, log::checkpoint_files& checkpoints,
                              boost::asio::any_io_executor io,
                              std::vector<recovered_log>& recovered, cluster_logs in) {
    return [&wal, &checkpoints, io, &recovered, in](std::size_t i,
                                                    const service::group_strand& strand)
               -> std::unique_ptr<log::group_log> {
        cluster_node* cluster = in.node;
        auto s = setup_of(i, strand, io);
        if (cluster != nullptr) {
            if (!cluster->hosts(s.group)) return nullptr;
            s.raft = cluster->raft_options(s.group);
            s.snapshots = replication::snapshot_store{
                in.cold, fmt::format("raft/g{:04}/n{}/", s.group, cluster->self().id)};
        }
        s.recovered = std::move(recovered[i].state);
        auto disk = std::make_unique<replication::wal_group_disk>(wal, checkpoints, s.group, strand,
                                                                  recovered[i].last_index);
        replication::raft_transport& transport =
            cluster != nullptr ? cluster->transport(s.group) : peers();
        auto log = std::make_unique<replication::raft_group_log>(std::move(s), std::move(disk),
                                                                 transport);
        if (cluster != nullptr) cluster->attach(static_cast<std::uint32_t>(i), *log, strand);
        return log;
    };
}

service::log_factory memory_logs(boost::asio::any_io_executor io) {
    return [io](std::size_t i, const service::group_strand& strand)
               -> std::unique_ptr<log::group_log> {
        return std::make_unique<replication::raft_group_log>(
            setup_of(i, strand, io), std::make_unique<replication::memory_group_disk>(strand),
            peers());
    };
}

void release_checkpointed(log::node_wal& wal, const std::vector<recovered_log>& recovered) {
    for (std::size_t g = 0; g < recovered.size(); ++g) {
        if (recovered[g].checkpoint > 0) {
            wal.release(static_cast<std::uint32_t>(g), recovered[g].checkpoint);
        }
    }
}

}  // namespace dstream::cli
