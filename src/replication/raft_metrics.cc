#include "replication/raft_metrics.h"

#include <string>

namespace dstream::replication {

raft_metrics::group_slot& raft_metrics::of(std::uint32_t group) {
    const std::lock_guard lock(_mutex);
    while (_groups.size() <= group) _groups.emplace_back();
    return _groups[group];
}

void raft_metrics::collect(metrics::exposition& out) const {
    const std::lock_guard lock(_mutex);
    if (_groups.empty()) return;
    const auto each = [&](std::string_view name, metrics::metric_type type, std::string_view help,
                          auto value) {
        out.family(name, type, help);
        for (std::size_t g = 0; g < _groups.size(); ++g) {
            const std::string label = std::to_string(g);
            out.sample(name, {{"group", label}}, static_cast<std::uint64_t>(value(_groups[g])));
        }
    };
    each("dstream_raft_role", metrics::metric_type::gauge,
         "This node's role in the group: 0 follower, 1 candidate, 2 leader",
         [](const group_slot& s) { return s.role.load(std::memory_order_relaxed); });
    each("dstream_raft_term", metrics::metric_type::gauge, "The group's current Raft term",
         [](const group_slot& s) { return s.term.load(std::memory_order_relaxed); });
    each("dstream_raft_leader", metrics::metric_type::gauge,
         "The node id of the group's leader as this node knows it (0: none)",
         [](const group_slot& s) { return s.leader.load(std::memory_order_relaxed); });
    each("dstream_raft_commit_index", metrics::metric_type::gauge,
         "The group's commit index on this node",
         [](const group_slot& s) { return s.commit_index.load(std::memory_order_relaxed); });
    each("dstream_raft_applied_index", metrics::metric_type::gauge,
         "The last index of the group this node applied",
         [](const group_slot& s) { return s.applied_index.load(std::memory_order_relaxed); });
    each("dstream_raft_last_index", metrics::metric_type::gauge,
         "The last index of the group's log on this node, durable or not",
         [](const group_slot& s) { return s.last_index.load(std::memory_order_relaxed); });
    each("dstream_raft_leadership_changes_total", metrics::metric_type::counter,
         "Changes of this node's role, term or known leader in the group",
         [](const group_slot& s) { return s.leadership_changes.load(std::memory_order_relaxed); });
    each("dstream_raft_elections_total", metrics::metric_type::counter,
         "Elections this node stood in for the group (it became a candidate)",
         [](const group_slot& s) { return s.elections.load(std::memory_order_relaxed); });
    each("dstream_raft_refused_proposals_total", metrics::metric_type::counter,
         "Proposals the group's leader refused before writing them: RAFT_UNCOMMITTED_BACKPRESSURE "
         "or RAFT_LOG_PRESSURE",
         [](const group_slot& s) { return s.refused_proposals.load(std::memory_order_relaxed); });
    each("dstream_raft_log_bytes_in_memory", metrics::metric_type::gauge,
         "Bytes of log entries this node keeps in memory for the group",
         [](const group_slot& s) { return s.entries_kept_bytes.load(std::memory_order_relaxed); });
    each("dstream_raft_snapshots_sent_total", metrics::metric_type::counter,
         "Snapshot images this node put in the object store for followers that needed them",
         [](const group_slot& s) { return s.snapshots_sent.load(std::memory_order_relaxed); });
    each("dstream_raft_snapshots_fetched_total", metrics::metric_type::counter,
         "Leaders' snapshot images this node fetched from the object store and checked",
         [](const group_slot& s) { return s.snapshots_fetched.load(std::memory_order_relaxed); });
    each("dstream_raft_snapshot_failures_total", metrics::metric_type::counter,
         "Puts and fetches of snapshot images that failed (the leader sends again)",
         [](const group_slot& s) { return s.snapshot_failures.load(std::memory_order_relaxed); });
}

}  // namespace dstream::replication
