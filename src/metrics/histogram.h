#pragma once
// A histogram over fixed bucket bounds, in integer units (microseconds,
// records, bytes). Observing is a search over a short constant array and two
// relaxed atomic adds; the bounds are a template argument so that arrays of
// histograms (one per route) need no constructor arguments.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <span>
#include <vector>

namespace dstream::metrics {

// What a scrape reads: per-bucket counts (not cumulative), the last one for
// values above every bound.
struct histogram_snapshot {
    std::span<const std::uint64_t> bounds;
    std::vector<std::uint64_t> counts;  // bounds.size() + 1
    std::uint64_t sum = 0;
};

// `Bounds`: ascending upper bounds, inclusive (Prometheus `le`).
template <const auto& Bounds>
class histogram {
    static constexpr std::size_t bound_count = std::size(Bounds);
    static_assert(bound_count > 0);

public:
    void observe(std::uint64_t v) noexcept {
        const auto at = std::lower_bound(std::begin(Bounds), std::end(Bounds), v);
        _counts[static_cast<std::size_t>(at - std::begin(Bounds))].fetch_add(
            1, std::memory_order_relaxed);
        _sum.fetch_add(v, std::memory_order_relaxed);
    }

    histogram_snapshot read() const {
        histogram_snapshot s;
        s.bounds = std::span<const std::uint64_t>(std::begin(Bounds), bound_count);
        s.counts.reserve(bound_count + 1);
        for (const auto& c : _counts) s.counts.push_back(c.load(std::memory_order_relaxed));
        s.sum = _sum.load(std::memory_order_relaxed);
        return s;
    }

private:
    std::array<std::atomic<std::uint64_t>, bound_count + 1> _counts{};
    std::atomic<std::uint64_t> _sum{0};
};

// Bucket bounds shared by several modules.
namespace bounds {
// Latencies in microseconds, from 50 µs to a minute (long-polls and SSE
// connections last up to 60 s).
inline constexpr std::uint64_t latency_us[] = {
    50,        100,       250,        500,        1'000,     2'500,   5'000,
    10'000,    25'000,    50'000,     100'000,    250'000,   500'000, 1'000'000,
    2'500'000, 5'000'000, 10'000'000, 30'000'000, 60'000'000};
}  // namespace bounds

}  // namespace dstream::metrics
