#pragma once
// Random draws as an input: a group's history id, a fork reference's number,
// a part id, the consensus' election jitter. The server draws from the
// system's entropy; tests and the simulation from a seeded generator, so a
// run replays from its seed.
#include <cstdint>

namespace dstream::runtime {

class random_source {
public:
    virtual ~random_source() = default;
    // Any thread.
    virtual std::uint64_t next() = 0;
};

// Seeded once from std::random_device, one generator per thread.
random_source& system_random();

}  // namespace dstream::runtime
