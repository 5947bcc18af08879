#pragma once
// The simulated network between the nodes, in one of two modes a seed draws.
//
// Lossy: every message has its own latency (so messages overtake each
// other), some are dropped, some arrive twice, and a partition splits the
// nodes into two sides that hear nothing of each other until it heals. A
// worse network than the server's, still one Raft must survive.
//
// Transport: what the server's peer transport gives (one TCP connection per
// pair of nodes, for every group both ways). A direction of a pair is a FIFO:
// messages arrive in the order sent, never twice; a retransmission delays the
// message and everything behind it. The bytes sent to a peer and not yet
// arrived are bounded: past the bound a new message is dropped. A connection
// breaks (a reset, a node's crash, a timeout while a direction is cut): what
// is queued or in flight on it, both ways, is lost at once, and the pair is
// silent until a reconnect succeeds, tried after a backoff (50 ms doubling to
// 2 s, with jitter; a node that starts dials at once) and only while both
// nodes are up and both directions open. Messages sent meanwhile wait (bounded) for the new connection. A
// partition cuts directions, both ways (two sides) or one way (one node's
// packets to some others are lost while theirs reach it): a cut direction
// holds its messages, which arrive once it heals (TCP retransmits them),
// unless the connection times out first (user_timeout_ms). A slow link adds
// hundreds of ms to one pair's latency for a while.
//
// In both modes a message to a node that is down is lost.
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
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
    // Whether a node is up (a connection to one that is down cannot open).
    using up_fn = std::function<bool(std::uint64_t node)>;
    network(event_queue& events, sim_random& rng, const sim_options& options, const tracer& trace,
            deliver_fn deliver, sent_fn sent, up_fn up);

    struct counters {
        std::uint64_t sent = 0;
        std::uint64_t dropped = 0;     // lossy: dropped at random
        std::uint64_t queue_full = 0;  // transport: dropped past the queue's bound
        std::uint64_t breaks = 0;      // transport: connections broken
        std::uint64_t lost = 0;        // transport: lost with a broken connection
    };

    void send(std::uint64_t from, std::uint64_t to, std::uint32_t group, std::string_view bytes);
    // side[n] for node n (1-based); nodes on different sides are cut off.
    void partition(std::vector<int> side);
    void heal_partition();
    bool partitioned() const { return !_side.empty(); }
    // Transport: each (from, to) direction is cut, its reverse is not.
    void one_way(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& cuts);
    // Transport: reverses one_way.
    void heal_one_way();
    bool one_way_cut() const { return _one_way; }
    // Transport: the connection of a pair resets.
    void reset(std::uint64_t a, std::uint64_t b);
    // Transport: a node crashed; its connections break.
    void crashed(std::uint64_t node);
    // Transport: a node (re)started; it dials its peers at once, its backoff
    // fresh.
    void started(std::uint64_t node);
    // Transport: the pair's latency is `extra_ms` more for `for_ms`.
    void slow(std::uint64_t a, std::uint64_t b, std::uint64_t extra_ms, std::uint64_t for_ms);
    // Every partition and slow link gone.
    void heal();
    // Drops, duplicates and latency spikes on or off.
    void set_faults(bool on) { _faults = on; }
    std::uint64_t sent() const { return _count.sent; }
    const counters& count() const { return _count; }

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
    static constexpr std::uint64_t backoff_min_ms = 50;
    static constexpr std::uint64_t backoff_max_ms = 2000;

    struct message {
        std::uint32_t group;
        std::string bytes;
    };
    // One direction of a pair's connection.
    struct direction {
        std::deque<message> queue;   // sent, not yet arrived, oldest first
        std::uint64_t bytes = 0;     // of queue
        std::size_t scheduled = 0;   // the first `scheduled` have an arrival event
        std::uint64_t generation = 0;  // arrival events of an older one are void
        std::uint64_t last_arrival = 0;
        bool cut = false;
        std::uint64_t cut_episode = 0;
        bool full = false;  // the last message was dropped past the bound
    };
    // An unordered pair a < b.
    struct pair {
        bool up = true;
        std::uint64_t backoff_ms = backoff_min_ms;
        std::uint64_t attempt = 0;  // the reconnect attempt that counts
        std::uint64_t slow_ms = 0;
        std::uint64_t slow_until = 0;
        std::uint64_t slow_episode = 0;
    };

    std::uint64_t latency();
    std::uint64_t latency(std::uint64_t from, std::uint64_t to);
    void send_lossy(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                    std::string_view bytes);
    void send_transport(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                        std::string_view bytes);
    bool connected(std::uint64_t a, std::uint64_t b) const {
        return _side.empty() || _side[a] == _side[b];
    }
    direction& dir(std::uint64_t from, std::uint64_t to) { return _dirs[from * _slots + to]; }
    pair& pair_of(std::uint64_t a, std::uint64_t b) {
        return _pairs[std::min(a, b) * _slots + std::max(a, b)];
    }
    // Recomputes which directions are cut, after a partition changed.
    void update_cuts();
    // Loses what a direction holds; how many messages.
    std::uint64_t clear(direction& d);
    // Schedules the arrival of every waiting message of an open direction.
    void flow(std::uint64_t from, std::uint64_t to);
    void arrive(std::uint64_t from, std::uint64_t to, std::uint64_t generation);
    void break_pair(std::uint64_t a, std::uint64_t b, const char* why);
    // The next reconnect attempt, after the backoff (or `delay_ms`).
    void schedule_reconnect(std::uint64_t a, std::uint64_t b, std::uint64_t delay_ms);
    void reconnect(std::uint64_t a, std::uint64_t b, std::uint64_t attempt);
    void trace_message(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                       std::string_view bytes) const;

    event_queue& _events;
    sim_random& _rng;
    const sim_options& _options;
    const tracer& _trace;
    deliver_fn _deliver;
    sent_fn _on_sent;
    up_fn _up;
    std::vector<int> _side;
    bool _faults = true;
    counters _count;

    // Transport, indexed by node ids 1..nodes.
    std::uint64_t _slots = 0;
    std::vector<direction> _dirs;
    std::vector<pair> _pairs;
    bool _one_way = false;
    std::vector<bool> _one_way_cuts;  // [from * _slots + to]
};

}  // namespace dstream::sim
