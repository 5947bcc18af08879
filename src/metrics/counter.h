#pragma once
// A monotonically increasing count. Updating it is one relaxed atomic add:
// callers on hot paths (a request, a WAL batch) pay nothing else, and a
// scrape may read a value a few events behind.
#include <atomic>
#include <cstdint>

namespace dstream::metrics {

class counter {
public:
    void inc(std::uint64_t n = 1) noexcept { _value.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t value() const noexcept { return _value.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> _value{0};
};

}  // namespace dstream::metrics
