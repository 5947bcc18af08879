#include "service/flush_backoff.h"

#include <algorithm>

namespace dstream::service {

void flush_backoff::failed(std::uint64_t now_ms, runtime::random_source& random) {
    // Flushes started together fail together: one wait for all of them.
    if (failing() && now_ms < _next_ms) return;
    ++_failures;
    // Capped before it is shifted: 2^failures overflows long before an outage ends.
    const unsigned doublings = std::min(_failures - 1, 30u);
    const auto base = static_cast<std::uint64_t>(_base.count());
    const auto cap = static_cast<std::uint64_t>(_cap.count());
    const std::uint64_t delay = std::min(cap, base << doublings);
    // Between half the delay and all of it.
    const std::uint64_t jitter = delay / 2 == 0 ? 0 : random.next() % (delay / 2 + 1);
    _next_ms = now_ms + delay - jitter;
}

void flush_backoff::clear() {
    _failures = 0;
    _next_ms = 0;
}

}  // namespace dstream::service
