#include "service/checkpoint_schedule.h"

namespace dstream::service {

bool checkpoint_schedule::sweep_due(std::uint64_t applied_index) {
    const bool quiet = applied_index == _index_at_last_sweep;
    _index_at_last_sweep = applied_index;
    ++_sweeps_since_taken;
    return quiet || _sweeps_since_taken >= busy_sweeps_at_most;
}

}  // namespace dstream::service
