#pragma once
// The simulated network between the nodes: every message has its own
// latency (so messages overtake each other), some are dropped, some arrive
// twice, and a partition splits the nodes into two sides that hear nothing
// of each other until it heals. A message to a node that is down is lost.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "event_queue.h"
#include "inputs.h"
#include "options.h"
#include "replication/raft_replica.h"
#include "trace.h"

namespace dstream::sim {

class network {
public:
    using deliver_fn = std::function<void(std::uint64_t from, std::uint64_t to,
                                          std::uint32_t group, std::string_view bytes)>;
    // Sees every message as it is sent.
    using sent_fn = std::function<void(std::uint64_t from, std::string_view bytes)>;
    network(event_queue& events, sim_random& rng, const sim_options& options, const tracer& trace,
            deliver_fn deliver, sent_fn sent);

    void send(std::uint64_t from, std::uint64_t to, std::uint32_t group, std::string_view bytes);
    // side[n] for node n (1-based); nodes on different sides are cut off.
    void partition(std::vector<int> side);
    void heal() { _side.clear(); }
    bool partitioned() const { return !_side.empty(); }
    bool connected(std::uint64_t a, std::uint64_t b) const {
        return _side.empty() || _side[a] == _side[b];
    }
    // Drops, duplicates and latency spikes on or off.
    void set_faults(bool on) { _faults = on; }
    std::uint64_t sent() const { return _sent; }

    // A node's raft_transport for one group.
    class endpoint final : public replication::raft_transport {
    public:
        endpoint(network& net, std::uint64_t node, std::uint32_t group)
            : _net(net), _node(node), _group(group) {}
        void send(std::uint64_t to, std::string_view bytes) override {
            _net.send(_node, to, _group, bytes);
        }

    private:
        network& _net;
        std::uint64_t _node;
        std::uint32_t _group;
    };

private:
    std::uint64_t latency();

    event_queue& _events;
    sim_random& _rng;
    const sim_options& _options;
    const tracer& _trace;
    deliver_fn _deliver;
    sent_fn _on_sent;
    std::vector<int> _side;
    bool _faults = true;
    std::uint64_t _sent = 0;
};

}  // namespace dstream::sim
