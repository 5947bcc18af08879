#pragma once
// A cluster's membership and the placement of its Raft groups (the cluster
// file of `serve --cluster FILE`, config/cluster_file.h): each node's peer
// and client addresses, and which nodes are the voters of each group.
//
// Placement is a fixed function of the node list, so every node computes the
// same one without asking: the voters of group g are the nodes at positions
// g, g+1, ..., g+replicas-1 (modulo the node count) of the list in id order.
// Each node then hosts groups*replicas/nodes groups, give or take one, and is
// the first voter (the preferred leader) of groups/nodes of them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dstream::runtime {

struct host_port {
    std::string host;  // a name or an address; IPv6 without its brackets
    std::uint16_t port = 0;

    // "host:port", "[v6]:port" for an IPv6 address.
    std::string text() const;
    bool operator==(const host_port&) const = default;
};

// "10.0.0.1:7100", "localhost:4437", "[::1]:7100"; nothing for any other text
// (no port, port 0 or past 65535, an empty host).
std::optional<host_port> parse_host_port(std::string_view text);

struct cluster_node {
    std::uint32_t id = 0;  // 1 or more
    host_port raft;        // the peer transport
    host_port http;        // client HTTP; a redirect's Location names it
    // The admin listener (docs/operations.md), when the file names one: where
    // the backup commands send a group's work to its leader.
    std::optional<host_port> admin;
};

class cluster_map {
public:
    // Throws std::invalid_argument, naming what is wrong, unless: the id is a
    // valid Ursula-Cluster-Id, 1 to 4096 groups, 3 or 5 replicas and at least
    // that many nodes, node ids unique and 1 or more, no address used twice.
    cluster_map(std::string cluster_id, std::size_t groups, unsigned replicas,
                std::vector<cluster_node> nodes);

    const std::string& cluster_id() const { return _cluster_id; }
    std::size_t groups() const { return _groups; }
    unsigned replicas() const { return _replicas; }
    // In id order.
    const std::vector<cluster_node>& nodes() const { return _nodes; }
    const cluster_node* node(std::uint32_t id) const;

    // The voters of `group` (< groups()), the preferred leader first.
    std::vector<std::uint32_t> voters(std::size_t group) const;
    bool hosts(std::uint32_t node_id, std::size_t group) const;

private:
    std::string _cluster_id;
    std::size_t _groups;
    unsigned _replicas;
    std::vector<cluster_node> _nodes;
};

}  // namespace dstream::runtime
