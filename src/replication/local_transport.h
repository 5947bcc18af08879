#pragma once
// Raft messages between replicas of one process: each (node, group) replica
// attaches its log, and a message for (to, group) is handed to that log on
// its own strand. For tests of several voters in one process; a cluster's
// nodes use a network transport.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include "replication/raft_replica.h"

namespace dstream::replication {

class raft_group_log;

class local_network {
public:
    // The transport replica (node, group) sends with; valid while the network lives.
    raft_transport& transport(std::uint64_t node, std::uint32_t group);
    // Messages for (node, group) go to `log`, on `strand`.
    void attach(std::uint64_t node, std::uint32_t group, raft_group_log& log,
                boost::asio::any_io_executor strand);
    // Messages from or to `node` are dropped until heal().
    void isolate(std::uint64_t node);
    void heal(std::uint64_t node);
    // Messages longer than `bytes` are dropped, as the peer network drops
    // a frame past its bound; and how many were.
    void drop_longer_than(std::size_t bytes);
    std::uint64_t dropped_long() const;

private:
    class endpoint final : public raft_transport {
    public:
        endpoint(local_network& network, std::uint64_t node, std::uint32_t group)
            : _network(network), _node(node), _group(group) {}
        void send(std::uint64_t to, std::string_view bytes) override {
            _network.deliver(_node, to, _group, std::string(bytes));
        }

    private:
        local_network& _network;
        std::uint64_t _node;
        std::uint32_t _group;
    };
    struct attached {
        raft_group_log* log = nullptr;
        boost::asio::any_io_executor strand;
    };
    void deliver(std::uint64_t from, std::uint64_t to, std::uint32_t group, std::string bytes);

    mutable std::mutex _mutex;
    std::map<std::pair<std::uint64_t, std::uint32_t>, std::unique_ptr<endpoint>> _endpoints;
    std::map<std::pair<std::uint64_t, std::uint32_t>, attached> _logs;
    std::set<std::uint64_t> _isolated;
    std::size_t _max_bytes = SIZE_MAX;
    std::uint64_t _dropped_long = 0;
};

}  // namespace dstream::replication
