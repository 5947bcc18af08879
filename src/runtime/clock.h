#pragma once
// Time as an input. Only proposers read the wall clock (the time travels in
// commands, so every replica applies the same one); the consensus reads the
// monotonic one for its timeouts. The server uses system_clock(); tests and
// the simulation give a virtual clock of their own.
#include <chrono>
#include <cstdint>

#include "protocol/expiry.h"

namespace dstream::runtime {

class clock {
public:
    virtual ~clock() = default;
    // Milliseconds since the Unix epoch; any thread.
    virtual protocol::unix_ms wall_ms() const = 0;
    // Milliseconds on a clock that never goes back; any thread.
    virtual std::uint64_t monotonic_ms() const = 0;
};

// The machine's clocks.
clock& system_clock();

// The machine's wall clock, for what no replica applies (the edge's cursors).
inline protocol::unix_ms now_unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace dstream::runtime
