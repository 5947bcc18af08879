#pragma once
// This process as a node of a cluster (`serve --cluster FILE --node-id N`):
// the cluster map, the peer transport every hosted group's Raft log shares,
// each group's Raft options (its voters from the placement), what
// /__ursula/ready and /__ursula/cluster report, and the hand-over of its
// leaderships when it stops gracefully.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include "edge/node_status.h"
#include "replication/peer_network.h"
#include "replication/raft_group_log.h"
#include "runtime/cluster_map.h"

namespace dstream::cli {

struct raft_timing {
    unsigned election_ms = 500;
    unsigned heartbeat_ms = 50;
    unsigned trailing_entries = 1024;  // kept before a snapshot (raft_options::trailing)
};

class cluster_node final : public edge::node_status {
public:
    // Throws std::invalid_argument when `self` is not a node of `map`.
    cluster_node(boost::asio::io_context& io, runtime::cluster_map map, std::uint32_t self,
                 raft_timing timing);
    ~cluster_node() override;

    const runtime::cluster_map& map() const { return _map; }
    const runtime::cluster_node& self() const { return *_map.node(_self); }
    bool hosts(std::uint32_t group) const { return _map.hosts(_self, group); }
    std::vector<std::uint64_t> voters(std::uint32_t group) const;
    // The options of this node's replica of a group it hosts.
    replication::raft_options raft_options(std::uint32_t group) const;
    replication::raft_transport& transport(std::uint32_t group) { return _network.transport(group); }
    replication::peer_network& network() { return _network; }
    // Before start(): `log` (of a hosted group, on `strand`) takes the group's messages.
    void attach(std::uint32_t group, replication::raft_group_log& log,
                boost::asio::any_io_executor strand);
    // Listens on the raft address and dials the peers.
    void start() { _network.start(); }
    void stop() { _network.stop(); }

    // A graceful stop: the node reports not ready, and each group it leads
    // hands its leadership to another voter; `done` runs (on the io) once it
    // leads none, or when `bound` passed.
    void hand_over(std::chrono::milliseconds bound, std::function<void()> done);

    // edge::node_status
    bool ready() const override;
    std::string cluster_json() const override;

private:
    struct hosted_log {
        std::uint32_t group = 0;
        replication::raft_group_log* log = nullptr;
        boost::asio::any_io_executor strand;
    };
    std::size_t groups_led() const;
    void wait_for_hand_over(std::chrono::steady_clock::time_point until,
                            std::shared_ptr<std::function<void()>> done);

    boost::asio::io_context& _io;
    runtime::cluster_map _map;
    std::uint32_t _self;
    raft_timing _timing;
    replication::peer_network _network;
    std::vector<hosted_log> _logs;
    std::atomic<bool> _stopping{false};
};

}  // namespace dstream::cli
