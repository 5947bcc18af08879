#pragma once
// The wait between a dialer's attempts to reach a peer: doubling from a floor
// to a cap, each wait drawn in [half, all] of its step so that the nodes that
// lost one peer at once do not all redial it in step. reset() after an
// attempt that got through.
#include <algorithm>
#include <chrono>

#include "runtime/random.h"

namespace dstream::replication::detail {

class reconnect_backoff {
public:
    reconnect_backoff(std::chrono::milliseconds floor, std::chrono::milliseconds cap,
                      runtime::random_source& random)
        : _floor(std::max(floor, std::chrono::milliseconds(1))),
          _cap(std::max(cap, _floor)),
          _step(_floor),
          _random(random) {}

    std::chrono::milliseconds next() {
        const auto step = static_cast<std::uint64_t>(_step.count());
        const std::uint64_t half = step / 2;
        const auto wait = std::chrono::milliseconds(half + _random.next() % (step - half + 1));
        _step = std::min(_step * 2, _cap);
        return wait;
    }
    void reset() { _step = _floor; }

private:
    std::chrono::milliseconds _floor;
    std::chrono::milliseconds _cap;
    std::chrono::milliseconds _step;
    runtime::random_source& _random;
};

}  // namespace dstream::replication::detail
