#pragma once
// The peer transport's traffic with each other node, for /__ursula/metrics
// (dstream_peer_*, docs/metrics.md): a label per peer node, so the
// cardinality is the cluster's size. Updated by the connections' strands and
// by senders on any thread; rendered by a scrape. The slots are the
// process's: one node per process, so one peer_network counts in them.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/registry.h"

namespace dstream::replication {

struct peer_metrics : metrics::registered<peer_metrics> {
    struct peer_slot {
        metrics::counter sent_bytes;
        metrics::counter received_bytes;
        metrics::counter sent_messages;
        metrics::counter received_messages;
        metrics::counter dropped_messages;
        metrics::counter writes;  // socket writes: sent_messages / writes is the batching
        metrics::counter reconnects;
        metrics::gauge connected;  // moved by +1 / -1: each connection that comes up and goes
        std::atomic<std::uint64_t> rtt_us{0};
    };
    // The slot of `peer`, made on first use; slots never move once made.
    peer_slot& of(std::uint64_t peer);

    void collect(metrics::exposition& out) const;

private:
    mutable std::mutex _mutex;
    std::map<std::uint64_t, peer_slot> _peers;
};

}  // namespace dstream::replication
