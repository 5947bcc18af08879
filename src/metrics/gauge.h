#pragma once
// A value that goes up and down. Owners either set it or move it by deltas
// (several groups add their own changes to one node-wide total).
#include <atomic>
#include <cstdint>

namespace dstream::metrics {

class gauge {
public:
    void add(std::int64_t delta) noexcept { _value.fetch_add(delta, std::memory_order_relaxed); }
    void set(std::int64_t v) noexcept { _value.store(v, std::memory_order_relaxed); }
    std::int64_t value() const noexcept { return _value.load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> _value{0};
};

// Holds one unit of a gauge for as long as it lives (a reader that waits, a
// request in flight), so every exit path gives it back.
class gauge_hold {
public:
    explicit gauge_hold(gauge& g) noexcept : _gauge(g) { _gauge.add(1); }
    ~gauge_hold() { _gauge.add(-1); }
    gauge_hold(const gauge_hold&) = delete;
    gauge_hold& operator=(const gauge_hold&) = delete;

private:
    gauge& _gauge;
};

}  // namespace dstream::metrics
