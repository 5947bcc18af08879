#pragma once
// The simulation's sources of chance and time: one seeded generator for the
// whole run (every random choice comes from it, so a seed replays exactly),
// and per node a virtual clock and a random source for what the server
// draws (history ids), both derived from it.
#include <cstdint>
#include <random>

#include "event_queue.h"
#include "runtime/clock.h"
#include "runtime/random.h"

namespace dstream::sim {

class sim_random {
public:
    explicit sim_random(std::uint64_t seed) : _g(seed) {}
    std::uint64_t next() { return _g(); }
    // In [lo, hi].
    std::uint64_t between(std::uint64_t lo, std::uint64_t hi) {
        return lo + _g() % (hi - lo + 1);
    }
    bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(_g) < p; }
    double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(_g); }

private:
    std::mt19937_64 _g;
};

// A node's draws (a group's history id): seeded from the run's generator.
class node_random final : public runtime::random_source {
public:
    explicit node_random(std::uint64_t seed) : _g(seed) {}
    std::uint64_t next() override { return _g(); }

private:
    std::mt19937_64 _g;
};

// A node's clocks on virtual time; its wall clock is off by `skew_ms`, as
// real nodes' are (the proposer's time travels in the command).
class node_clock final : public runtime::clock {
public:
    node_clock(const event_queue& events, std::int64_t skew_ms) : _events(events), _skew(skew_ms) {}
    protocol::unix_ms wall_ms() const override {
        return epoch_ms + static_cast<protocol::unix_ms>(_events.now()) + _skew;
    }
    std::uint64_t monotonic_ms() const override { return _events.now(); }

private:
    static constexpr protocol::unix_ms epoch_ms = 1'700'000'000'000;
    const event_queue& _events;
    std::int64_t _skew;
};

}  // namespace dstream::sim
