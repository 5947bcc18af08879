#pragma once
// One simulated node: its disk, which outlives crashes, and while it is up
// every group's parts (the log on raft_replica, the state machine, the
// storage and transport adapters). A restart recovers as the server does
// (cli/recovery.cc): each group's newest checkpoint is restored, the WAL's
// records are read through replication::group_recovery, and the log starts
// from what that finds.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "checker.h"
#include "event_queue.h"
#include "group_disk.h"
#include "inputs.h"
#include "network.h"
#include "node_disk.h"
#include "options.h"
#include "sim_group.h"
#include "sim_log.h"
#include "trace.h"

namespace dstream::sim {

struct world_services {
    event_queue& events;
    sim_random& rng;
    const sim_options& options;
    const tracer& trace;
    checker& check;
    network& net;
    boost::asio::io_context& io;
};

class sim_node {
public:
    sim_node(std::uint64_t id, world_services services);
    ~sim_node();

    std::uint64_t id() const { return _id; }
    bool up() const { return !_groups.empty(); }
    // Starts from what the disk holds (nothing: a new node bootstraps).
    void start();
    // Everything not durable is lost; the node is down until start().
    void crash();
    void receive(std::uint32_t group, std::string_view bytes);

    node_disk& disk() { return _disk; }
    // While up.
    sim_group& group(std::uint32_t g) { return *_groups[g].group; }
    sim_log& log(std::uint32_t g) { return *_groups[g].log; }
    std::uint64_t incarnation() const { return _incarnation; }

private:
    struct live_group {
        std::unique_ptr<network::endpoint> transport;
        std::unique_ptr<group_disk> disk;
        std::unique_ptr<sim_group> group;
        std::unique_ptr<sim_log> log;
    };
    // The trace of every WAL record, when recovery refuses them.
    void dump_wal() const;

    std::uint64_t _id;
    world_services _w;
    node_disk _disk;
    std::uint64_t _incarnation = 0;
    std::unique_ptr<node_clock> _clock;
    std::unique_ptr<node_random> _random;
    std::vector<live_group> _groups;
};

}  // namespace dstream::sim
