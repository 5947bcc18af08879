#pragma once
// What the operator routes report of the node beyond the edge: readiness
// (/__ursula/ready) and, in a cluster, each hosted group's Raft state
// (/__ursula/cluster). Implemented by the composition root; any thread.
#include <string>

namespace dstream::edge {

class node_status {
public:
    virtual ~node_status() = default;
    // Whether the node takes traffic: it replayed its log, every group it
    // hosts knows a leader, and it is not stopping.
    virtual bool ready() const = 0;
    // The cluster's state as this node sees it, as JSON; empty on a single node.
    virtual std::string cluster_json() const = 0;
};

}  // namespace dstream::edge
