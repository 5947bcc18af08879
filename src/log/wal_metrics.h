#pragma once
// What the write-ahead log reports: the cost of each group commit (one
// pwritev + fdatasync for every record queued meanwhile) and its size on disk.
#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace dstream::log {

namespace wal_bounds {
inline constexpr std::uint64_t records[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
inline constexpr std::uint64_t bytes[] = {256,       1 << 10, 4 << 10, 16 << 10, 64 << 10,
                                          256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
}  // namespace wal_bounds

struct wal_metrics : metrics::registered<wal_metrics> {
    metrics::histogram<metrics::bounds::latency_us> fsync_us;
    metrics::histogram<wal_bounds::records> batch_records;
    metrics::histogram<wal_bounds::bytes> batch_bytes;
    metrics::counter write_errors;
    metrics::gauge bytes_on_disk;
    metrics::gauge segments;

    void collect(metrics::exposition& out) const;
};

}  // namespace dstream::log
