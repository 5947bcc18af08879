#pragma once
// The invariants, checked as the events that can break them happen:
//
// - election safety: at most one leader per term and group, over all nodes
//   and all time (Raft paper, 5.2);
// - log matching: two logs holding an entry of the same index and term hold
//   the same entries up to it (5.3), checked on every entry a replica writes
//   (the chain digest of its log up to the entry);
// - state machine safety: every replica applies the same entry at an index
//   (5.4.3), checked on the chain of each entry as it is applied;
// - leader completeness: a new leader of term T holds every entry committed
//   in an earlier term (5.4): an entry some replica applied while its own
//   term was below T was committed before T;
// - identical applied state: the state every replica has after applying an
//   index (a digest of its encoded checkpoint) is the same.
//
// The first broken invariant stops the run; it names the check, the node,
// the group and the time.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "event_queue.h"
#include "log/group_log.h"
#include "log_view.h"
#include "trace.h"

namespace dstream::sim {

class checker {
public:
    checker(const event_queue& events, const tracer& trace) : _events(events), _trace(trace) {}

    bool failed() const { return !_failure.empty(); }
    const std::string& failure() const { return _failure; }
    // Records the first failure: "<check>: <detail>".
    void fail(const std::string& check, const std::string& detail);

    void entry_written(std::uint64_t node, std::uint32_t group, std::uint64_t index,
                       std::uint64_t term, std::uint64_t chain);
    void leadership(std::uint64_t node, std::uint32_t group, const log::leadership& now,
                    const log_view& log);
    // The replica applied everything through `index` while its term was
    // `term`; `walked` is how far this replica's entries were checked.
    void applied_through(std::uint64_t node, std::uint32_t group, std::uint64_t index,
                         std::uint64_t term, const log_view& log, std::uint64_t& walked);
    // The chain of the entry committed at `index`, when one is known.
    std::optional<std::uint64_t> committed_chain(std::uint32_t group, std::uint64_t index) const;
    // A replica's applied state as of `index`.
    void state_at(std::uint64_t node, std::uint32_t group, std::uint64_t index,
                  std::uint64_t digest);

    std::uint64_t leaders_seen() const { return _leaders.size(); }
    std::uint64_t states_compared() const { return _states_compared; }

    // What a run exercised, for its summary line.
    struct counters {
        std::uint64_t installs = 0;       // leaders' snapshots installed
        std::uint64_t checkpoints = 0;    // replicas' own snapshots saved
        std::uint64_t failed_writes = 0;  // write_failed reports
        std::uint64_t restarts = 0;       // nodes started from their disk
    };
    counters& count() { return _count; }

private:
    struct committed {
        std::uint64_t chain = 0;
        std::uint64_t lowest_term = 0;  // the lowest term of a replica that applied it
        std::uint64_t node = 0;        // the first to apply it
    };
    struct state_seen {
        std::uint64_t digest = 0;
        std::uint64_t node = 0;
    };

    const event_queue& _events;
    const tracer& _trace;
    std::string _failure;
    // (group, term) -> leader
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> _leaders;
    // (group, index, term) -> chain, of every entry any replica wrote
    std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>>
        _written;
    std::map<std::pair<std::uint32_t, std::uint64_t>, committed> _committed;
    std::map<std::pair<std::uint32_t, std::uint64_t>, state_seen> _states;
    std::uint64_t _states_compared = 0;
    counters _count;
};

}  // namespace dstream::sim
