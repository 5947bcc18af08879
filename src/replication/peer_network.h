#pragma once
// Raft messages between the nodes of a cluster over TCP: one connection per
// pair of nodes carries every group's messages both ways. The lower node id
// dials, the higher only accepts, so a pair never holds two connections; the
// dialer redials with capped, jittered backoff whenever it has none.
//
// Each connection opens with a hello both ways (magic, protocol version,
// cluster id, node id; detail/peer_wire.h) and closes, with a warning, on any
// mismatch. Messages to one peer queue and leave in one write per batch, so
// the heartbeats of many groups share a syscall. Nothing waits for a peer:
// with no connection up, or a full queue, a message is dropped and counted
// (Raft sends it again). A ping every second keeps the round trip, and a
// connection silent for a few seconds is taken for dead.
//
// Stop the network before the logs attached to it: a message already handed
// to a group's strand is still delivered there.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "replication/raft_replica.h"
#include "runtime/cluster_map.h"

namespace boost::asio {
class io_context;
}

namespace dstream::replication {

class raft_group_log;

struct peer_address {
    std::uint64_t node = 0;
    runtime::host_port raft;
};

struct peer_network_options {
    std::string cluster_id;  // a peer of another cluster is refused at the handshake
    std::uint64_t node = 0;  // this node's id
    // This node's raft address: accepted on, and the source address of every
    // outgoing connection (bound before connecting, port 0), so that a
    // partition made by address cuts exactly one pair.
    runtime::host_port listen;
    std::vector<peer_address> peers;  // every other node
    // Per peer, bytes queued or being written; past it, messages are dropped
    // (Raft resends) and counted.
    std::size_t max_queued_bytes = 64u << 20;
    // The backoff with jitter between dial attempts.
    std::chrono::milliseconds reconnect_min{50}, reconnect_max{2000};
};

class peer_network {
public:
    peer_network(boost::asio::io_context& io, peer_network_options options);
    // Stops; work still in flight on the io_context ends there by itself.
    ~peer_network();
    peer_network(const peer_network&) = delete;
    peer_network& operator=(const peer_network&) = delete;

    // The transport group `group`'s log sends with; valid while the network
    // lives. send() may be called from any thread (each group runs on its own
    // strand).
    raft_transport& transport(std::uint32_t group);
    // Before start(): messages of `group` go to `log`, posted on `strand`.
    void attach(std::uint32_t group, raft_group_log& log, boost::asio::any_io_executor strand);
    // A node's own messages, beside its groups': what one node asks another
    // about a group the asking node may not host. Before start(): those from
    // the peers go to `receive`, posted on `executor`.
    raft_transport& node_transport();
    void attach_node(std::function<void(std::string)> receive,
                     boost::asio::any_io_executor executor);
    // Binds the listener (throws std::runtime_error naming the address if it
    // cannot) and starts dialing.
    void start();
    // Closes every connection and the listener; later sends are dropped. Any
    // thread, idempotent.
    void stop();
    // For `dstream cluster status` and tests: whether a connection to `node`
    // is up now.
    bool connected(std::uint64_t node) const;

private:
    class state;
    // Shared with the connections' coroutines, which may outlive this object
    // by the time their sockets take to close.
    std::shared_ptr<state> _state;
};

}  // namespace dstream::replication
