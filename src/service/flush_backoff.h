#pragma once
// What a group's leader knows of the cold store from its own chunk flushes:
// whether the last one failed, and when the next may start. After a failure
// none starts before a delay that doubles with each failure in a row, up to a
// cap, with jitter, so an outage costs one attempt per delay instead of one
// per append, and groups that failed together do not retry in step. On the
// group's strand.
#include <chrono>
#include <cstdint>

#include "runtime/random.h"

namespace dstream::service {

class flush_backoff {
public:
    flush_backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap)
        : _base(base), _cap(cap) {}

    // The last flush failed and none has succeeded since: the store is out.
    bool failing() const { return _failures > 0; }
    // `now_ms` on the monotonic clock.
    bool may_start(std::uint64_t now_ms) const { return now_ms >= _next_ms; }

    void failed(std::uint64_t now_ms, runtime::random_source& random);
    // A flush succeeded, or the leader stepped down: the next starts at once.
    void clear();

private:
    std::chrono::milliseconds _base;
    std::chrono::milliseconds _cap;
    unsigned _failures = 0;
    std::uint64_t _next_ms = 0;
};

}  // namespace dstream::service
