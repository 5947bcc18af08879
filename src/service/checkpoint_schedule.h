#pragma once
// When a group's sweep (every few seconds) checkpoints it. A checkpoint
// rewrites the group's hot tails, so a busy group checkpoints by applied
// bytes (--checkpoint-bytes) and not by the clock: at every sweep it would
// write its whole hot state every few seconds, more bytes than its log.
// The sweep checkpoints a group that has gone quiet (nothing applied since
// the sweep before), so an idle group's log is let go of, and one that was
// never quiet for a whole interval after a number of sweeps, so that a
// group writing slowly does not hold the node's oldest WAL segment for
// hours. On the group's strand.
#include <cstdint>

namespace dstream::service {

class checkpoint_schedule {
public:
    // Sweeps after which a group that was never quiet checkpoints anyway.
    static constexpr unsigned busy_sweeps_at_most = 12;

    // The group starts (or restarts) with this index applied.
    void started(std::uint64_t applied_index) { _index_at_last_sweep = applied_index; }
    // `applied_index` is the group's applied index when the sweep runs.
    // True when this sweep should checkpoint (if anything is new).
    bool sweep_due(std::uint64_t applied_index);
    // A checkpoint was written, by the sweep or by applied bytes. A failed
    // one is not counted: the sweeps since the last written one go on.
    void taken() { _sweeps_since_taken = 0; }

private:
    std::uint64_t _index_at_last_sweep = 0;
    unsigned _sweeps_since_taken = 0;
};

}  // namespace dstream::service
