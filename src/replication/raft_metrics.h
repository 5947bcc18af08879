#pragma once
// Each group's Raft state on this node, for /__ursula/metrics (dstream_raft_*,
// docs/metrics.md): a label per group, never per stream, so the cardinality
// is the group count. Updated on each group's strand, rendered by a scrape.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>

#include "log/group_log.h"
#include "metrics/registry.h"

namespace dstream::replication {

struct raft_metrics : metrics::registered<raft_metrics> {
    struct group_slot {
        std::atomic<std::uint32_t> role{0};  // log::role
        std::atomic<std::uint64_t> term{0};
        std::atomic<std::uint64_t> leader{0};
        std::atomic<std::uint64_t> commit_index{0};
        std::atomic<std::uint64_t> applied_index{0};
        std::atomic<std::uint64_t> last_index{0};
        std::atomic<std::uint64_t> leadership_changes{0};
        std::atomic<std::uint64_t> elections{0};  // times this node stood as a candidate
        std::atomic<std::uint64_t> refused_proposals{0};  // RAFT_*_PRESSURE refusals
        std::atomic<std::uint64_t> entries_kept_bytes{0};
        // Snapshots by way of the object store (snapshot_courier.h).
        std::atomic<std::uint64_t> snapshots_sent{0};     // images a leader put there
        std::atomic<std::uint64_t> snapshots_fetched{0};  // images a follower fetched
        std::atomic<std::uint64_t> snapshot_failures{0};  // puts and fetches that failed
    };
    // The slot of `group`, made on first use (at start, before any scrape
    // reads it: slots never move once made).
    group_slot& of(std::uint32_t group);

    void collect(metrics::exposition& out) const;

private:
    mutable std::mutex _mutex;
    std::deque<group_slot> _groups;
};

}  // namespace dstream::replication
